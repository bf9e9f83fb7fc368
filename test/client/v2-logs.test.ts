// The v2 client's getLogs (it follows `urls.logs` only), listed items and a refused cursor, against
// real servers: a serverless deployment that serves logs and a self-hosted one that serves none.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlowgateClient, InvalidCursorError } from "../../src/index.ts";
import { openDirectory } from "../../src/store/index.ts";
import { generateApiKey, hashApiKey, keyPrefix } from "../../src/surfaces/api-keys.ts";
import { delayGraph, startTestServer, waitFor, type TestServer } from "./fixtures.ts";

const printing = (text: string) => ({ "1": { class_type: "FlowgatePrint", inputs: { text } } });

let serverless: TestServer;
let selfHosted: TestServer;
let key: string;
/** Every request a client sent, as `METHOD path`. */
const sent: string[] = [];
const recording = (request: Request) => {
  sent.push(`${request.method} ${new URL(request.url).pathname}`);
  return fetch(request);
};

beforeAll(async () => {
  serverless = await startTestServer(["--surface", "serverless", "--serverless-domain", "example.test"]);
  selfHosted = await startTestServer();
  const dir = await openDirectory(serverless.dataDir);
  await dir.ensureAccount("acme", { tier: "free", credits: 1000, now: Date.now() });
  key = generateApiKey();
  await dir.addApiKey({ key_hash: hashApiKey(key), account: "acme", prefix: keyPrefix(key), created_at: Date.now(), revoked_at: null });
  await dir.createDeployment({ id: "app", state: "ready", demo: false, created_at: Date.now() });
  await dir.close();
});
afterAll(async () => {
  await serverless.stop();
  await selfHosted.stop();
});

describe("v2 client: logs and listing items", () => {
  it("getLogs follows urls.logs: the log of a finished job, null while it runs, re-read on every call", async () => {
    const client = new FlowgateClient({ baseUrl: `${serverless.url}/deployment/app`, token: key, fetch: recording });
    const job = await client.submit(printing("logged by the client test"));
    expect(job.urls.logs).toBe(`${serverless.url}/deployment/app/api/v2/jobs/${job.id}/logs`);
    await client.wait(job);
    const logs = await client.getLogs(job.id);
    expect(logs?.text).toContain("logged by the client test");
    expect(logs).toMatchObject({ truncated: false, complete: true });

    const slow = await client.submit(delayGraph(30));
    await waitFor(
      () => client.get(slow),
      (j) => j.status === "running",
      "running",
    );
    expect(await client.getLogs(slow)).toBeNull();
    await client.cancel(slow);
    await client.wait(slow);
    sent.length = 0;
    await client.getLogs(slow);
    expect(sent).toEqual([`GET /deployment/app/api/v2/jobs/${slow.id}/logs`]);
  });

  it("getLogs asks nothing where the job carries no logs link (a surface serving no logs)", async () => {
    const client = new FlowgateClient({ baseUrl: selfHosted.url, fetch: recording });
    const job = await client.wait(await client.submit(printing("not captured here")));
    expect(job.urls).not.toHaveProperty("logs");
    sent.length = 0;
    expect(await client.getLogs(job)).toBeNull();
    expect(await client.getLogs(job.id)).toBeNull();
    expect(sent).toEqual([]);
  });

  it("list items carry create_time, update_time and deployment_id; a cursor the server did not issue is InvalidCursorError", async () => {
    const client = new FlowgateClient({ baseUrl: `${serverless.url}/deployment/app`, token: key });
    const job = await client.wait(await client.submit(printing("listed")));
    const item = (await client.list({ limit: 1 })).jobs[0]!;
    expect(item.id).toBe(job.id);
    expect(item).toMatchObject({ create_time: job.created_at, update_time: job.completed_at, deployment_id: "app" });
    const err = await client.list({ cursor: "not-a-cursor" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidCursorError);
    expect((err as InvalidCursorError).status).toBe(400);
  });
});
