// Every error from every layer is the envelope: unknown routes, body limits, parameter
// validation, malformed multipart, unexpected failures (one fixed generic sentence, nothing of
// the cause). Also the liveness and readiness probes.
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes } from "../../generated/routes.ts";
import { ServiceError } from "../../src/domain/errors.ts";
import { STATUS_OF, toEnvelope, UPSTREAM_MESSAGE } from "../../src/server/error-envelope.ts";
import { checkAgainstSpec, delayGraph, expectError, expectValid, imageGraph, startTestServer, upload, v, waitFor, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { bodyLimit: 32 * 1024, maxUploadBytes: 64 * 1024 } });
});
afterAll(async () => {
  await s?.stop();
});

const LEAKS = /\/work\/|\/tmp\/|\/srv\/|node_modules|\.ts:\d|at [\w.<>]+ \(|SELECT|INSERT|sqlite|SQLITE|Error:/;

describe("the envelope from the router and the parsers", () => {
  it.each([
    ["GET", "/api/v2/nope"],
    ["GET", "/api/v2/jobs/x/y/z"],
    ["DELETE", "/api/v2/jobs"],
    ["PUT", "/api/v2/jobs/0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42"],
    ["GET", "/api/v3/jobs"],
    ["GET", "/no/such/page"], // "/" is the dashboard
    ["POST", "/api/v2/assets/by-hash/blake3:00"],
  ])("ERR-1 an unknown route (%s %s) is 404 not_found in the envelope", async (method, path) => {
    const res = await s.api.request(method, path);
    expectError(res, 404, "not_found");
  });

  it("ERR-1 a malformed URL is 400 invalid_request in the envelope, without echoing it", async () => {
    for (const path of ["/api/v2/jobs/%E0%A4%A", "/api/v2/jobs/%"]) {
      const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        http
          .get(s.url + path, (res) => {
            let text = "";
            res.on("data", (d) => (text += d));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
          })
          .on("error", reject);
      });
      expect(status).toBe(400);
      const json = JSON.parse(body);
      expectValid(v.schema_ErrorEnvelope, json);
      expect(json.error.code).toBe("invalid_request");
      expect(body).not.toContain("%E0");
    }
  });

  it("ERR-1 a body over the limit is 413 payload_too_large", async () => {
    const big = { workflow: imageGraph(), pad: "x".repeat(64 * 1024) };
    expectError(await s.api.post("/api/v2/jobs", big), 413, "payload_too_large", v.response_createJob_413);
    expectError(
      await s.api.post("/api/v2/assets/from-hash", { hash: `blake3:${"0".repeat(64)}`, file_path: "x".repeat(64 * 1024) }),
      413,
      "payload_too_large",
      v.response_createAssetFromHash_413,
    );
  });

  it("ERR-1 bad path and query parameters are 400 invalid_request naming the field", async () => {
    const long = "a".repeat(65);
    for (const [path, validator] of [
      [`/api/v2/jobs/${long}`, v.response_getJob_400],
      [`/api/v2/jobs/${long}/workflow`, v.response_getJobWorkflow_400],
      [`/api/v2/assets/${long}`, v.response_getAsset_400],
      ["/api/v2/jobs?limit=1000", v.response_listJobs_400],
    ] as const) {
      const res = await s.api.get(path);
      expectError(res, 400, "invalid_request", validator);
      expect(res.body.error.details.fields.length).toBeGreaterThan(0);
    }
  });

  it("ERR-1 a malformed multipart body is 400, never a 500", async () => {
    const boundary = "----x";
    const truncated = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\nContent-Type: application/octet-stream\r\n\r\nabc`;
    for (const [body, type] of [
      [truncated, `multipart/form-data; boundary=${boundary}`],
      ["garbage", "multipart/form-data"],
      ["garbage", `multipart/form-data; boundary=${boundary}`],
    ]) {
      const res = await s.api.request("POST", "/api/v2/assets", { body, headers: { "content-type": type! } });
      expectError(res, 400, "invalid_request", v.response_uploadAsset_400);
    }
  });

  it("ERR-1 more than one file part is refused without a 500", async () => {
    const res = await upload(s.api, [
      { name: "file", file: randomBytes(10) },
      { name: "file", file: randomBytes(10) },
    ]);
    expect([400, 413]).toContain(res.status);
    expectValid(v.schema_ErrorEnvelope, res.body);
  });
});

describe("unexpected failures (ERR-4 ERR-5)", () => {
  const failures: Array<[string, () => Error]> = [
    ["a plain error with a path and SQL", () => new Error("SQLITE_CORRUPT: SELECT * FROM jobs at /srv/flowgate/src/store/sqlite.ts:42")],
    ["an error that carries a 4xx statusCode", () => Object.assign(new Error("upstream said 404 at /srv/x.ts:1"), { statusCode: 404 })],
    ["a TypeError", () => new TypeError("Cannot read properties of undefined (reading 'id')")],
  ];

  it.each(failures)("%s becomes 500 upstream_error with the fixed sentence on every operation", async (_name, make) => {
    const job = await s.api.submit(imageGraph());
    await s.api.waitTerminal(job.id);
    const up = await upload(s.api, [{ name: "file", file: randomBytes(16) }]);
    const store = s.runtime.store;
    s.app.finishedViews.clear(); // a cached finished view would answer without the store
    const saved = {
      getJob: store.getJob,
      listJobs: store.listJobs,
      getAsset: store.getAsset,
      createJob: store.createJob,
      getJobWorkflow: store.getJobWorkflow,
      findAssetByBlob: store.findAssetByBlob,
    };
    const boom = async () => {
      throw make();
    };
    Object.assign(store, { getJob: boom, listJobs: boom, getAsset: boom, createJob: boom, getJobWorkflow: boom, findAssetByBlob: boom });
    try {
      const answers = [
        ["getJob", await s.api.get(`/api/v2/jobs/${job.id}`)],
        ["listJobs", await s.api.get("/api/v2/jobs")],
        ["cancelJob", await s.api.post(`/api/v2/jobs/${job.id}/cancel`)],
        ["getJobWorkflow", await s.api.get(`/api/v2/jobs/${job.id}/workflow`)],
        ["streamJobEvents", await s.api.get(`/api/v2/jobs/${job.id}/events`)],
        ["createJob", await s.api.post("/api/v2/jobs", { workflow: imageGraph() })],
        ["getAsset", await s.api.get(`/api/v2/assets/${up.body.id}`)],
        ["getAssetContent", await s.api.get(`/api/v2/assets/${up.body.id}/content`)],
        ["deleteAsset", await s.api.request("DELETE", `/api/v2/assets/${up.body.id}`)],
        ["createAssetFromHash", await s.api.post("/api/v2/assets/from-hash", { hash: up.body.hash })],
      ] as const;
      for (const [op, res] of answers) {
        expect(res.status, `${op}: ${res.text}`).toBe(500);
        expectError(res, 500, "upstream_error", (v as Record<string, any>)[`response_${op}_500`]);
        expect(res.body.error.message).toBe(UPSTREAM_MESSAGE);
        expect(res.body.error.details ?? null).toBeNull();
        expect(res.text).not.toMatch(LEAKS);
      }
      const head = await s.api.request("HEAD", `/api/v2/assets/by-hash/${up.body.hash}`);
      expect(head.status).toBe(500);
      expect(head.text).toBe("");
    } finally {
      Object.assign(store, saved);
    }
    // The server is fine afterwards.
    expect((await s.api.get(`/api/v2/jobs/${job.id}`)).status).toBe(200);
  });
});

describe("execution failures are not HTTP errors (JERR-1)", () => {
  it("a job whose node throws is 201, then failed with job.error", async () => {
    const job = await s.api.submit({
      "1": { class_type: "FlowgateSaveFile", inputs: { text: "x", filename_prefix: "bad", extension: "no/pe" } },
    });
    const done = await s.api.waitTerminal(job.id);
    expect(done.status).toBe("failed");
    expect(done.error.code).toBe("invalid_input");
    expect(done.error.traceback ?? "").not.toMatch(/\/work\/|\/src\/|node_modules/);
  });
});

describe("codes, scope and version", () => {
  it("the helpers' spec check itself rejects what the spec does not declare", () => {
    const res = (status: number, body: unknown) => ({ status, headers: new Headers({ "content-type": "application/json" }), text: JSON.stringify(body), body });
    const url = `${s.url}/api/v2/jobs/0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42`;
    expect(() => checkAgainstSpec("GET", url, res(418, { error: { code: "not_found", message: "x" } }))).toThrow(/does not declare/);
    expect(() => checkAgainstSpec("GET", url, res(404, { error: { code: "queue_full", message: "x" } }))).toThrow();
    expect(() => checkAgainstSpec("GET", url, res(200, { id: "x" }))).toThrow(/does not match/);
    expect(() => checkAgainstSpec("GET", `${s.url}/api/v2/nope`, res(404, { message: "x" }))).toThrow(/does not match/);
    checkAgainstSpec("GET", url, res(404, { error: { code: "not_found", message: "Not found." } }));
  });

  it("ERR-2 every code the spec declares on a v2 response is answered with exactly that status", () => {
    let checked = 0;
    for (const route of routes.filter((r) => r.family === "v2")) {
      for (const [status, response] of Object.entries(route.responses)) {
        for (const code of response.errorCodes) {
          expect(STATUS_OF[code as keyof typeof STATUS_OF], `${route.operationId} ${code}`).toBe(Number(status));
          expect(toEnvelope(new ServiceError(code as never, "m")).status).toBe(Number(status));
          if (Number(status) === 429) expect(toEnvelope(new ServiceError(code as never, "m", null, 2.4)).headers["retry-after"]).toBe("3");
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  it.each(["/api/v2/workflows", "/api/v2/models", "/api/v2/object_info", "/api/v2/nodes", "/api/v2/parameters"])(
    "GEN-7 v2 has no saved workflows, model library, node introspection or named parameters: %s is 404",
    async (path) => {
      expectError(await s.api.get(path), 404, "not_found");
    },
  );

  it("VER-1 the contract served is v2 (2.2.0, additive over 2.0.0); other versions are unknown routes", async () => {
    const spec = readFileSync(new URL("../../spec/openapi.yaml", import.meta.url), "utf8");
    expect(/^info:\n(?: {2}.*\n)*? {2}version: 2\.2\.0$/m.test(spec)).toBe(true);
    expectError(await s.api.get("/api/v3/jobs"), 404, "not_found");
    expectError(await s.api.get("/api/v1/jobs"), 404, "not_found");
  });
});

describe("probes", () => {
  it("GET /healthz is 200 ok and /readyz is 200 ready", async () => {
    const h = await s.api.get("/healthz");
    expect(h.status).toBe(200);
    expectValid(v.response_getHealth_200, h.body);
    const r = await s.api.get("/readyz");
    expect(r.status).toBe(200);
    expectValid(v.response_getReadiness_200, r.body);
    expect(r.body).toEqual({ status: "ready", checks: { store: true, engine: true, queue: true, dispatch: true, storage: true, blobs: true } });
  });

  it("/readyz is 503 not_ready while the queue is at its bound", async () => {
    const q = await startTestServer({ flags: ["--concurrency", "1", "--queue-limit", "1"] });
    try {
      const running = await q.api.submit(delayGraph(30));
      await q.api.waitJob(running.id, (j) => j.status === "running", "running");
      // A start is visible (GET says running) a moment before its fsync ends and it leaves the queue.
      await waitFor(
        () => q.runtime.dispatcher.waiting,
        (n) => n === 0,
        "the start to be durable",
      );
      const waiting = await q.api.submit(delayGraph(30));
      const r = await q.api.get("/readyz");
      expect(r.status).toBe(503);
      expectValid(v.response_getReadiness_503, r.body);
      expect(r.body).toEqual({ status: "not_ready", checks: { store: true, engine: true, queue: false, dispatch: true, storage: true, blobs: true } });
      await q.api.post(`/api/v2/jobs/${waiting.id}/cancel`);
      expect((await q.api.get("/readyz")).status).toBe(200);
    } finally {
      await q.stop();
    }
  });

  it("/readyz is 503 not_ready while the store cannot write durably", async () => {
    const store = s.runtime.store;
    const check = store.check;
    store.check = async () => {
      throw new Error("EIO: fsync of the WAL failed");
    };
    try {
      const r = await s.api.get("/readyz");
      expect(r.status).toBe(503);
      expect(r.body).toEqual({ status: "not_ready", checks: { store: false, engine: true, queue: true, dispatch: true, storage: true, blobs: true } });
    } finally {
      store.check = check;
    }
    expect((await s.api.get("/readyz")).status).toBe(200);
  });

  it("unknown ids never reach the store as anything but a lookup", async () => {
    for (const id of ["../../etc/passwd", "%2e%2e%2f", "'; DROP TABLE jobs; --", randomUUID()]) {
      const res = await s.api.get(`/api/v2/jobs/${encodeURIComponent(id)}`);
      expectError(res, 404, "not_found", v.response_getJob_404);
    }
  });
});
