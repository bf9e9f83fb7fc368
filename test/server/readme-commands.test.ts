// The README's "A first job" runs as written, with curl, against a real server: the submission,
// the poll, the event stream and the label filter each answer what the comment beside them says.
// (test/docs/commands.test.ts lints every shell command of the docs; this one runs these.)
import { execFile, spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { read, shellBlocks, shellStatements } from "../docs/markdown.ts";
import { startTestServer, type TestServer } from "../client/fixtures.ts";

const HAS_CURL = spawnSync("curl", ["--version"]).status === 0;
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.stop();
});

/** Runs a statement in bash, on this test's server instead of the README's port (asynchronously: the server is in this process). */
function shell(statement: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("bash", ["-c", statement.replaceAll("http://127.0.0.1:8189", server.url)], { encoding: "utf8" }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

describe.skipIf(!HAS_CURL)("the README's first job", () => {
  it("submits, polls, streams and lists by label with the commands as printed", async () => {
    const block = shellBlocks(read("README.md")).find((b) => b.code.includes("curl -s -X POST"));
    expect(block, "the README's curl block").toBeDefined();
    const [submit, ...rest] = shellStatements(block!.code);
    const created = await shell(submit!);
    expect(created.code, created.stderr).toBe(0);
    const job = JSON.parse(created.stdout) as { id: string; metadata: Record<string, string> };
    expect(job.metadata).toEqual({ project: "hello" });
    const [poll, events, labelled] = rest.map((s) => s.replaceAll("<id>", job.id));
    expect(rest).toHaveLength(3);
    expect(JSON.parse((await shell(poll!)).stdout)).toMatchObject({ id: job.id });
    // The stream closes after the terminal status, so curl -N ends by itself.
    const stream = await shell(events!);
    expect(stream.code, stream.stderr).toBe(0);
    expect(stream.stdout).toMatch(/event: status\ndata: .*"status":"succeeded"/);
    const listed = await shell(labelled!);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { jobs: Array<{ id: string }> }).jobs.map((j) => j.id)).toContain(job.id);
  });
});
