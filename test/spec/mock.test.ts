// The Prism mock (`npm run mock`) serves examples that the generated validators accept.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../generators/spec-files.ts";
import * as validators from "../../generated/validators.js";

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

describe("npm run mock", () => {
  let child: ChildProcess;
  let base: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts", "mock.ts"), "--port", String(port)], {
      cwd: ROOT,
      stdio: "ignore",
    });
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

  it("POST /api/v2/jobs answers 201 with a valid job without logs", async () => {
    const res = await fetch(`${base}/api/v2/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ workflow: { "1": { class_type: "PrimitiveString", inputs: { value: "x" } } } }),
    });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(validators.response_createJob_201(body), JSON.stringify(validators.response_createJob_201.errors)).toBe(true);
  });

  it("GET /api/v2/jobs/{id} answers 200 with a valid job", async () => {
    const res = await fetch(`${base}/api/v2/jobs/0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(validators.response_getJob_200(body), JSON.stringify(validators.response_getJob_200.errors)).toBe(true);
  });

  it("a body the spec forbids is refused, not answered with a job", async () => {
    const res = await fetch(`${base}/api/v2/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ workflow: {}, webhook_url: "http://example.invalid" }),
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });
});
