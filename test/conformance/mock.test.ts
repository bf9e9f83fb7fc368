// The static subset (--static: shape checks that need no execution) against the Prism mock of the
// spec, which serves the spec's examples. The examples show a job with logs on GET, so the mock
// stands for a serverless surface.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../generators/spec-files.ts";
import { ALL_CHECKS, runConformance } from "../../conformance/index.ts";
import { failureLines } from "./helpers.ts";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

describe("the static subset against the Prism mock", () => {
  let child: ChildProcess;
  let base: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts", "mock.ts"), "--port", String(port)], { cwd: ROOT, stdio: "ignore" });
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await fetch(`${base}/healthz`);
        return;
      } catch {
        if (Date.now() > deadline) throw new Error("the mock did not start within 60 s");
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }, 90_000);

  afterAll(() => {
    child?.kill("SIGTERM");
  });

  it("every static check passes, and only static checks ran", { timeout: 120_000 }, async () => {
    const report = await runConformance({ baseUrl: base, static: true, surface: "serverless" });
    expect(failureLines(report)).toBe("");
    expect(report.static).toBe(true);
    const checks = report.results.filter((r) => r.kind === "check");
    expect(checks.length).toBe(ALL_CHECKS.filter((c) => c.static).length);
    expect(checks.every((r) => r.status === "passed"), JSON.stringify(checks.filter((r) => r.status !== "passed").map((r) => [r.title, r.reason]))).toBe(true);
  });
});
