// Ctrl-C during `flowgate run` cancels the job on the server, then the command exits (130).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlowgateClient } from "../../src/index.ts";
import { delayGraph, startTestServer, waitFor, type TestServer } from "../client/fixtures.ts";
import { eventually, startCli } from "./cli.ts";

let server: TestServer;
let dir: string;
beforeAll(async () => {
  server = await startTestServer();
  dir = await mkdtemp(join(tmpdir(), "flowgate-sigint-"));
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("Ctrl-C", () => {
  it("cancels the running job on the server, then exits 130", async () => {
    const graph = join(dir, "delay.json");
    await writeFile(graph, JSON.stringify(delayGraph(60)));
    const cli = startCli(["run", graph, "--progress", "plain", "--base-url", server.url]);
    const id = await eventually(() => /job (\S+) submitted/.exec(cli.stderr())?.[1], "the job id");
    const client = new FlowgateClient({ baseUrl: server.url });
    await waitFor(
      () => client.get(id),
      (j) => j.status === "running",
      "job running",
    );
    cli.child.kill("SIGINT");
    const result = await cli.exited;
    expect(result.code, result.stderr).toBe(130);
    expect(result.stderr).toContain(`canceling job ${id}`);
    // The last line says where the job ended, not that it was on its way there.
    expect(result.stderr.trimEnd().split("\n").at(-1)).toBe(`job ${id} canceled`);
    const end = await waitFor(
      () => client.get(id),
      (j) => j.status === "canceled",
      "job canceled on the server",
    );
    expect(end.status).toBe("canceled");
  });
});
