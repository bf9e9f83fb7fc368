// URL-3 against a server mounted under a prefix: a gateway (a node:http proxy) serves it at
// /deployment/abc/* and writes links as a gateway would (/deployment/abc/api/v2/...). The client,
// configured with the prefixed base URL, must resolve those links against the origin, never
// against the base URL (which would give /deployment/abc/deployment/abc/...).
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blake3Hex } from "../../src/domain/blake3.ts";
import { FlowgateClient, type JobEvent } from "../../src/index.ts";
import { delayGraph, samplerGraph, startTestServer, waitFor, type TestServer } from "./fixtures.ts";
import { startPrefixProxy, type RunningProxy } from "./proxies.ts";

const PREFIX = "/deployment/abc";
let server: TestServer;
let gateway: RunningProxy;
let client: FlowgateClient;
let dir: string;

beforeAll(async () => {
  server = await startTestServer();
  gateway = await startPrefixProxy(server.url, PREFIX);
  client = new FlowgateClient({ baseUrl: `${gateway.url}${PREFIX}` });
  dir = await mkdtemp(join(tmpdir(), "flowgate-prefix-"));
});
afterAll(async () => {
  await gateway?.stop();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("links behind a gateway mount", () => {
  it("submit, get, stream, wait and download all go through /deployment/abc once", async () => {
    const job = await client.submit(samplerGraph(4));
    expect(job.urls.self).toBe(`${gateway.url}${PREFIX}/api/v2/jobs/${job.id}`);
    expect(job.urls.events).toBe(`${gateway.url}${PREFIX}/api/v2/jobs/${job.id}/events`);

    const events: JobEvent[] = [];
    for await (const e of client.stream(job)) events.push(e);
    expect(events.some((e) => e.source === "stream")).toBe(true);
    const done = await client.wait(job.id);
    expect(done.status).toBe("succeeded");
    const output = done.outputs[0]!;
    expect(output.url.startsWith(`${gateway.url}${PREFIX}/api/v2/assets/`)).toBe(true);
    const saved = await client.download(output, `${dir}/`);
    expect(`blake3:${await blake3Hex(await readFile(saved.path))}`).toBe(output.hash);

    expect(gateway.seen).toContain(`GET ${PREFIX}/api/v2/jobs/${job.id}`);
    expect(gateway.seen).toContain(`GET ${PREFIX}/api/v2/jobs/${job.id}/events`);
    expect(gateway.seen.filter((s) => s.includes(`${PREFIX}${PREFIX}`))).toEqual([]);
    expect(gateway.seen.filter((s) => !s.includes(`${PREFIX}/api/v2/`))).toEqual([]);
  });

  it("cancel follows the job's cancel link", async () => {
    const job = await client.submit(delayGraph(30));
    await waitFor(
      () => client.get(job),
      (j) => j.status === "running",
      "running",
    );
    const answer = await client.cancel(job);
    expect(["canceling", "canceled"]).toContain(answer.status);
    expect(gateway.seen).toContain(`POST ${PREFIX}/api/v2/jobs/${job.id}/cancel`);
    expect((await client.wait(job)).status).toBe("canceled");
  });
});
