// Bounds and their order: an idempotency key already claimed is a reuse even when the queue is
// full; bounded names and tag lists; answers in the contract's envelope with the declared headers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes } from "../../generated/routes.ts";
import { delayGraph, expectError, imageGraph, multipart, startTestServer, upload, v, type TestServer } from "../server/helpers.ts";

const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");

describe("a full queue", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ flags: ["--queue-limit", "4", "--concurrency", "1"] });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("IDEM: a key already claimed is 422 idempotency_key_reuse, not 429 queue_full", async () => {
    const first = await s.api.submit(delayGraph(60), { key: "fill-key" });
    const ids = [first.id];
    // Fill the queue to its bound (one job runs, four wait).
    for (;;) {
      const res = await s.api.post("/api/v2/jobs", { workflow: delayGraph(60) });
      if (res.status === 429) break;
      expect(res.status, res.text).toBe(201);
      ids.push(res.body.id);
    }
    expectError(await s.api.post("/api/v2/jobs", { workflow: delayGraph(60) }, { headers: { "idempotency-key": "fill-key" } }), 422, "idempotency_key_reuse");
    // Another body under the same key: still a reuse.
    expectError(await s.api.post("/api/v2/jobs", { workflow: delayGraph(1) }, { headers: { "idempotency-key": "fill-key" } }), 422, "idempotency_key_reuse");
    // A fresh key is refused for the bound.
    expectError(await s.api.post("/api/v2/jobs", { workflow: delayGraph(60) }, { headers: { "idempotency-key": "fresh-key" } }), 429, "queue_full");
    // The hosted interface says backpressure with a 503 (its 429 means an inactive subscription), as the spec declares.
    const hosted = await fetch(`${s.url}/api/prompt`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: delayGraph(60) }),
    });
    expect(hosted.status).toBe(503);
    expect(hosted.headers.get("retry-after") ?? "").toMatch(/^\d+$/);
    expect(((await hosted.json()) as any).error.type).toBe("queue_full");
    expect(Object.keys(routes.find((r) => r.operationId === "hostedQueuePrompt" || (r.method === "POST" && r.url === "/api/prompt"))!.responses)).toContain(
      "503",
    );
    for (const id of ids) await s.api.post(`/api/v2/jobs/${id}/cancel`);
  });

  it("IDEM: a submission arriving while the first with its key is being written is a reuse, not queue_full", async () => {
    const waiting = [];
    while (s.runtime.dispatcher.waiting < 3) waiting.push((await s.api.submit(delayGraph(60))).id);
    // The second submission is checked against the bound while the first holds the last place
    // but is not written yet (the store writes a turn's inserts at the next setImmediate).
    const submit = () => s.runtime.jobs.submit({ owner: "" }, { workflow: delayGraph(60), idempotency_key: "same-turn" });
    const first = submit();
    const inserting = () => (s.runtime.jobs as unknown as { inserting: number }).inserting;
    for (let i = 0; i < 10_000 && inserting() === 0; i++) await Promise.resolve();
    expect(inserting()).toBe(1);
    const [a, b] = await Promise.allSettled([first, submit()]);
    expect(a.status).toBe("fulfilled");
    expect(b.status).toBe("rejected");
    expect((b as PromiseRejectedResult).reason.code).toBe("idempotency_key_reuse");
    for (const id of [...waiting, (a as PromiseFulfilledResult<any>).value.job.id]) await s.api.post(`/api/v2/jobs/${id}/cancel`);
  });
});

describe("bounded descriptions and uploads", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("a filename_prefix over 255 characters is 422 invalid_workflow out_of_range; 255 is fine", async () => {
    const res = await s.api.post("/api/v2/jobs", { workflow: imageGraph("p".repeat(100_000)) });
    expectError(res, 422, "invalid_workflow", v.response_createJob_422);
    expect(res.body.error.details.node_errors["2"]).toEqual([
      { field: "filename_prefix", reason: "out_of_range", message: 'Input "filename_prefix" is longer than 255 characters.' },
    ]);
    expect(res.text.length).toBeLessThan(2000);
    const ok = await s.api.submit(imageGraph("p".repeat(255)));
    expect((await s.api.waitTerminal(ok.id)).status).toBe("succeeded");
  });

  it("more than 64 tags, or a tag over 128 characters, is 400 invalid_request (from-hash and upload)", async () => {
    const stored = await upload(s.api, [{ name: "file", file: PNG, filename: "a.png" }]);
    expect(stored.status, stored.text).toBe(201);
    const hash = stored.body.hash;
    const many = Array.from({ length: 100_000 }, (_, i) => `t${i}`);
    expectError(await s.api.post("/api/v2/assets/from-hash", { hash, tags: many }), 400, "invalid_request", v.response_createAssetFromHash_400);
    expectError(await s.api.post("/api/v2/assets/from-hash", { hash, tags: ["x".repeat(129)] }), 400, "invalid_request");
    expect((await s.api.post("/api/v2/assets/from-hash", { hash, tags: Array.from({ length: 64 }, (_, i) => `t${i}`) })).status).toBe(201);
    const tagParts = (n: number, len = 3) => Array.from({ length: n }, (_, i) => ({ name: "tags", value: `${i}`.padEnd(len, "x") }));
    expectError(await upload(s.api, [...tagParts(1, 129), { name: "file", file: PNG }]), 400, "invalid_request");
    const tooMany = await upload(s.api, [...tagParts(65), { name: "file", file: PNG }]);
    expect(tooMany.status, tooMany.text).toBeGreaterThanOrEqual(400);
    expect(tooMany.status).toBeLessThan(500);
    expect(v.schema_ErrorEnvelope(tooMany.body)).toBe(true);
  });

  it("a file_path over 1,024 characters is 400 invalid_request", async () => {
    expectError(
      await upload(s.api, [
        { name: "file_path", value: "f".repeat(1025) },
        { name: "file", file: PNG },
      ]),
      400,
      "invalid_request",
    );
  });

  it("two files in one upload are 400 invalid_request, on v2 and on the hosted interface", async () => {
    const res = await upload(s.api, [
      { name: "file", file: PNG },
      { name: "file", file: PNG },
    ]);
    expectError(res, 400, "invalid_request", v.response_uploadAsset_400);
    const { body, contentType } = multipart([
      { name: "image", file: PNG, filename: "a.png", type: "image/png" },
      { name: "image", file: PNG, filename: "b.png", type: "image/png" },
    ]);
    const hosted = await fetch(`${s.url}/api/upload/image`, { method: "POST", headers: { "content-type": contentType }, body: new Uint8Array(body) });
    expect(hosted.status).toBe(400);
    expect(((await hosted.json()) as any).error.type).toBe("invalid_request");
  });

  it("an upper-case expected_hash is 400 invalid_request (the contract's form is lower-case)", async () => {
    const stored = await upload(s.api, [{ name: "file", file: PNG }]);
    const upper = `blake3:${stored.body.hash.slice(7).toUpperCase()}`;
    expectError(
      await upload(s.api, [
        { name: "expected_hash", value: upper },
        { name: "file", file: PNG },
      ]),
      400,
      "invalid_request",
    );
    const lower = await upload(s.api, [
      { name: "expected_hash", value: stored.body.hash },
      { name: "file", file: PNG },
    ]);
    expect(lower.status, lower.text).toBe(200);
  });
});
