// Idempotency-Key over HTTP: single use, race-free, released on a definitive failure, kept on
// an unknown outcome, expiring after 24 hours on the server's clock.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { delayGraph, expectError, HOUR, imageGraph, startTestServer, v, waitFor, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.stop();
});

const submitWithKey = (server: TestServer, key: string, body: Record<string, unknown>) =>
  server.api.post("/api/v2/jobs", body, { headers: { "idempotency-key": key } });

async function jobCount(server: TestServer): Promise<number> {
  let n = 0;
  let cursor: string | null = null;
  do {
    const page: any = await server.api.get(`/api/v2/jobs?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
    n += page.body.jobs.length;
    cursor = page.body.next_cursor;
  } while (cursor);
  return n;
}

describe("single use", () => {
  it("IDEM-1 IDEM-2 IDEM-7 the first request is processed; a retry is 422 idempotency_key_reuse, with no replay", async () => {
    const key = randomUUID();
    const body = { workflow: imageGraph() };
    const first = await submitWithKey(s, key, body);
    expect(first.status).toBe(201);
    const before = await jobCount(s);
    const retry = await submitWithKey(s, key, body);
    expectError(retry, 422, "idempotency_key_reuse", v.response_createJob_422);
    expect(retry.headers.get("idempotency-replayed")).toBeNull();
    expect(first.headers.get("idempotency-replayed")).toBeNull();
    expect(retry.text).not.toContain(first.body.id);
    expect(await jobCount(s)).toBe(before);
  });

  it("IDEM-2 a same-key request with a different body is rejected too", async () => {
    const key = randomUUID();
    expect((await submitWithKey(s, key, { workflow: imageGraph() })).status).toBe(201);
    expectError(await submitWithKey(s, key, { workflow: delayGraph(0) }), 422, "idempotency_key_reuse", v.response_createJob_422);
  });

  it("IDEM-2 a used key is a reuse even when the later body is invalid", async () => {
    const key = randomUUID();
    expect((await submitWithKey(s, key, { workflow: imageGraph() })).status).toBe(201);
    expectError(await submitWithKey(s, key, { workflow: { "1": { class_type: "NoSuchNode", inputs: {} } } }), 422, "idempotency_key_reuse");
    expectError(await submitWithKey(s, key, { workflow: { nodes: [], links: [] } }), 422, "idempotency_key_reuse");
  });

  it("IDEM-8 extra_data is excluded from the comparison", async () => {
    const key = randomUUID();
    const workflow = imageGraph();
    expect((await submitWithKey(s, key, { workflow, extra_data: { api_key_vendor_org: "sk-one" } })).status).toBe(201);
    expectError(await submitWithKey(s, key, { workflow, extra_data: { api_key_vendor_org: "sk-two" } }), 422, "idempotency_key_reuse");
    expectError(await submitWithKey(s, key, { workflow }), 422, "idempotency_key_reuse");
  });

  it("IDEM-2 50 concurrent submissions with one key make exactly one job", async () => {
    const fresh = await startTestServer();
    try {
      const key = randomUUID();
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => submitWithKey(fresh, key, { workflow: imageGraph(`c${i}`) })));
      const created = results.filter((r) => r.status === 201);
      expect(created).toHaveLength(1);
      for (const r of results.filter((r) => r.status !== 201)) expectError(r, 422, "idempotency_key_reuse", v.response_createJob_422);
      expect(await jobCount(fresh)).toBe(1);
    } finally {
      await fresh.stop();
    }
  });

  it("keys are independent of each other", async () => {
    const results = await Promise.all(Array.from({ length: 10 }, () => submitWithKey(s, randomUUID(), { workflow: imageGraph() })));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(201));
  });
});

describe("claim and release", () => {
  it("IDEM-3 a request rejected before submission (400) claims nothing", async () => {
    const key = randomUUID();
    expectError(await submitWithKey(s, key, { workflow: imageGraph(), webhook_url: "https://x" }), 400, "invalid_request");
    expect((await submitWithKey(s, key, { workflow: imageGraph() })).status).toBe(201);
  });

  it.each([
    ["invalid_workflow", { "1": { class_type: "NoSuchNode", inputs: {} } }],
    ["workflow_format_ui", { nodes: [], links: [] }],
    [
      "missing_asset",
      {
        "1": { class_type: "LoadImage", inputs: { image: { __type: "core/ASSET", info: { id: randomUUID() } } } },
        "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
      },
    ],
  ])("IDEM-4 the key is released after %s: a retry proceeds", async (code, workflow) => {
    const key = randomUUID();
    expectError(await submitWithKey(s, key, { workflow }), 422, code, v.response_createJob_422);
    expect((await submitWithKey(s, key, { workflow: imageGraph() })).status).toBe(201);
  });

  it("IDEM-4 the key is released after queue_full", async () => {
    const q = await startTestServer({ flags: ["--concurrency", "1", "--queue-limit", "1"] });
    try {
      const running = await q.api.submit(delayGraph(30));
      await q.api.waitJob(running.id, (j) => j.status === "running", "running");
      // A start is visible before it is durable; until then the job still holds its queue place.
      await waitFor(
        () => q.runtime.dispatcher.waiting,
        (n) => n === 0,
        "the start to be durable",
      );
      const waiting = await q.api.submit(delayGraph(30));
      const key = randomUUID();
      expectError(await submitWithKey(q, key, { workflow: imageGraph() }), 429, "queue_full", v.response_createJob_429);
      await q.api.post(`/api/v2/jobs/${waiting.id}/cancel`);
      const retry = await submitWithKey(q, key, { workflow: imageGraph() });
      expect(retry.status).toBe(201);
      // The queue is full again, but a used key is a reuse first: retrying cannot help.
      expectError(await q.api.post("/api/v2/jobs", { workflow: imageGraph() }), 429, "queue_full");
      expectError(await submitWithKey(q, key, { workflow: imageGraph() }), 422, "idempotency_key_reuse", v.response_createJob_422);
    } finally {
      await q.stop();
    }
  });

  it("IDEM-5 ERR-4 ERR-5 when the outcome is unknown (a 5xx after the job was recorded) the key stays claimed", async () => {
    const dispatcher = s.runtime.dispatcher;
    const original = dispatcher.enqueue.bind(dispatcher);
    dispatcher.enqueue = () => {
      throw new Error("SQLITE_BUSY at /srv/flowgate/secret/path.ts:12 SELECT * FROM jobs");
    };
    const key = randomUUID();
    let failed;
    try {
      failed = await submitWithKey(s, key, { workflow: imageGraph() });
    } finally {
      dispatcher.enqueue = original;
    }
    expectError(failed, 500, "upstream_error", v.response_createJob_500);
    expect(failed.body.error.message).toBe("Something went wrong on our side. Please try again.");
    expect(failed.text).not.toMatch(/SQLITE|\/srv|SELECT|\.ts:/);
    expectError(await submitWithKey(s, key, { workflow: imageGraph() }), 422, "idempotency_key_reuse");
  });
});

describe("expiry", () => {
  it("IDEM-6 a key expires after 24 hours on the server's clock", async () => {
    const key = randomUUID();
    expect((await submitWithKey(s, key, { workflow: imageGraph() })).status).toBe(201);
    s.clock.advance(24 * HOUR - 60_000);
    expectError(await submitWithKey(s, key, { workflow: imageGraph() }), 422, "idempotency_key_reuse");
    s.clock.advance(60_000);
    const again = await submitWithKey(s, key, { workflow: imageGraph() });
    expect(again.status).toBe(201);
    expectError(await submitWithKey(s, key, { workflow: imageGraph() }), 422, "idempotency_key_reuse");
  });
});
