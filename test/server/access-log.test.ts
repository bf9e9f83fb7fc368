// The request log of `flowgate serve`: one line per request, written when it ends, naming method,
// path (never the query string) and status; nothing lost when the server stops.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnCli, type CliServer } from "./helpers.ts";

let cli: CliServer;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "flowgate-access-log-"));
  cli = await spawnCli(["--data-dir", dataDir, "--port", "0"]);
});

afterAll(async () => {
  if (cli && cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill("SIGKILL");
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

interface LogLine {
  msg: string;
  reqId?: string;
  req?: { method: string; path: string };
  res?: { statusCode: number };
  responseTime?: number;
}

describe("access log", () => {
  it("writes one line per request at its end, without the query string, and flushes it on a clean stop", async () => {
    const paths = ["/readyz?sig=do-not-log", "/api/v2/jobs/not-a-job", "/healthz"];
    for (const path of paths) await (await fetch(cli.url + path)).arrayBuffer();
    const malformed = await fetch(`${cli.url}/api/v2/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: "{" });
    expect(malformed.status).toBe(400);

    cli.child.kill("SIGTERM");
    expect(await cli.exited).toBe(0);
    const lines = cli
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as LogLine)
      .filter((l) => l.reqId !== undefined);

    expect(lines.map((l) => l.msg)).toEqual(["request completed", "request completed", "request completed", "request completed"]);
    expect(lines.map((l) => [l.req?.method, l.req?.path, l.res?.statusCode])).toEqual([
      ["GET", "/readyz", 200],
      ["GET", "/api/v2/jobs/not-a-job", 404],
      ["GET", "/healthz", 200],
      ["POST", "/api/v2/jobs", 400],
    ]);
    expect(lines.every((l) => typeof l.responseTime === "number")).toBe(true);
    expect(cli.output()).not.toContain("do-not-log");
  });
});
