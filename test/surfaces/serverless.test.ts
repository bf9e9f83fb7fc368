// The serverless profile over real HTTP: deployments at the gateway mount and by Host header,
// deployment states, logs, the public demo deployment.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { openDirectory, type Directory } from "../../src/store/index.ts";
import { generateApiKey, hashApiKey, keyPrefix } from "../../src/surfaces/api-keys.ts";
import { startTestServer, until, type TestServer } from "../hosted/hosted-server.ts";

let server: TestServer;
let dir: Directory;
let key: string;

const printing = (text: string) => ({
  "1": { class_type: "FlowgatePrint", inputs: { text } },
});

/** A request with an explicit Host header (fetch does not let one set it). */
function request(
  method: string,
  url: string,
  opts: { host?: string; key?: string | null; body?: unknown } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        method,
        hostname: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        headers: { host: opts.host ?? u.host, "content-type": "application/json", ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : null });
        });
      },
    );
    req.on("error", reject);
    if (opts.body !== undefined) req.write(JSON.stringify(opts.body));
    req.end();
  });
}

beforeAll(async () => {
  server = await startTestServer(["--surface", "serverless", "--serverless-domain", "example.test"]);
  dir = await openDirectory(server.dataDir);
  await dir.ensureAccount("acme", { tier: "free", credits: 100, now: Date.now() });
  key = generateApiKey();
  await dir.addApiKey({ key_hash: hashApiKey(key), account: "acme", prefix: keyPrefix(key), created_at: Date.now(), revoked_at: null });
  for (const [id, state, demo] of [
    ["app", "ready", false],
    ["warming", "starting", false],
    ["gone", "stopped", false],
    ["demo", "ready", true],
  ] as const) {
    await dir.createDeployment({ id, state, demo, created_at: Date.now() });
  }
});
afterAll(async () => {
  await dir.close();
  await server.stop();
});

async function finished(base: string, id: string, opts: { host?: string; key?: string | null }) {
  return until(async () => {
    const r = await request("GET", `${base}/api/v2/jobs/${id}`, opts);
    return ["succeeded", "failed"].includes(r.body.status) ? r : undefined;
  });
}

describe("serverless surface", () => {
  it("URL-2/LOG-2/LOG-5: at the gateway mount, links carry the prefix once and logs come only with GET", async () => {
    const base = `${server.url}/deployment/app`;
    const created = await request("POST", `${base}/api/v2/jobs`, { key, body: { workflow: printing("hello from the run") } });
    expect(created.status).toBe(201);
    expect(v.response_createJob_201(created.body)).toBe(true);
    expect(created.body.logs).toBeUndefined();
    expect(created.body.urls.self).toBe(`/deployment/app/api/v2/jobs/${created.body.id}`);
    const done = await finished(base, created.body.id, { key });
    expect(done.body.status).toBe("succeeded");
    expect(v.response_getJob_200(done.body)).toBe(true);
    expect(done.body.logs.text).toContain("hello from the run");
    expect(done.body.logs.truncated).toBe(false);
    // An output's signed link works through the gateway mount it was made at (the raw path is verified).
    const link = new URL(done.body.outputs[0].url, server.url);
    expect(link.pathname.startsWith("/deployment/app/api/v2/assets/")).toBe(true);
    expect((await fetch(link)).status).toBe(200);
    expect((await fetch(new URL(link.pathname.replace("/assets/", "/%61ssets/") + link.search, server.url))).status).toBe(403);
    const again = await request("POST", `${server.url}${done.body.urls.cancel}`, { key });
    expect(again.status).toBe(200);
    expect(again.body.logs).toBeUndefined();
    // The same deployment by Host header: links have no prefix there.
    const byHost = await request("GET", `${server.url}/api/v2/jobs/${created.body.id}`, { key, host: "app.run.example.test" });
    expect(byHost.status).toBe(200);
    expect(byHost.body.urls.self).toBe(`/api/v2/jobs/${created.body.id}`);
    const staging = await request("GET", `${server.url}/api/v2/jobs/${created.body.id}`, { key, host: "app.stg.run.example.test" });
    expect(staging.status).toBe(200);
    // Another deployment does not see the job.
    expect((await request("GET", `${server.url}/deployment/demo/api/v2/jobs/${created.body.id}`, { key })).status).toBe(404);
  });

  it("SUB-9: not ready is 429 deployment_not_ready with Retry-After; stopped is 422; unknown is 404", async () => {
    const body = { workflow: printing("x") };
    const warming = await request("POST", `${server.url}/deployment/warming/api/v2/jobs`, { key, body });
    expect(warming.status).toBe(429);
    expect(warming.body.error.code).toBe("deployment_not_ready");
    expect(warming.headers["retry-after"]).toMatch(/^\d+$/);
    const gone = await request("POST", `${server.url}/deployment/gone/api/v2/jobs`, { key, body });
    expect(gone.status).toBe(422);
    expect(gone.body.error.code).toBe("deployment_stopped");
    expect((await request("POST", `${server.url}/deployment/nope/api/v2/jobs`, { key, body })).status).toBe(404);
    expect((await request("GET", `${server.url}/api/v2/jobs`, { key, host: "nope.run.example.test" })).status).toBe(404);
  });

  it("AUTH-3/LOG-4: the demo deployment takes no credential, captures the log and withholds it", async () => {
    const created = await request("POST", `${server.url}/deployment/demo/api/v2/jobs`, { body: { workflow: printing("demo output") } });
    expect(created.status).toBe(201);
    const done = await finished(`${server.url}/deployment/demo`, created.body.id, {});
    expect(done.body.status).toBe("succeeded");
    expect("logs" in done.body).toBe(false);
    const captured = await server.runtime.store.getJobLogs(created.body.id);
    expect(captured?.text).toContain("demo output");
    // Other deployments still need a key.
    expect((await request("GET", `${server.url}/deployment/app/api/v2/jobs`)).status).toBe(401);
  });

  it("LOG-7: a long log keeps its tail and says it was truncated", async () => {
    const long = `${"x".repeat(server.runtime.config.logLimitBytes)}THE-END`;
    const created = await request("POST", `${server.url}/deployment/app/api/v2/jobs`, { key, body: { workflow: printing(long) } });
    const done = await finished(`${server.url}/deployment/app`, created.body.id, { key });
    expect(done.body.logs.truncated).toBe(true);
    expect(done.body.logs.text.endsWith("THE-END\n") || done.body.logs.text.endsWith("THE-END")).toBe(true);
    expect(Buffer.byteLength(done.body.logs.text)).toBeLessThanOrEqual(server.runtime.config.logLimitBytes);
  });

  it("SUB-10: no credits is 402 on serverless too", async () => {
    await dir.updateAccount("acme", { credits: 0 });
    const r = await request("POST", `${server.url}/deployment/app/api/v2/jobs`, { key, body: { workflow: printing("x") } });
    expect(r.status).toBe(402);
    await dir.updateAccount("acme", { credits: 100 });
  });

  it("the hosted interface is not served on serverless", async () => {
    expect((await request("GET", `${server.url}/api/queue`, { key })).status).toBe(404);
  });
});
