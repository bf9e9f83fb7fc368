// Bounds and their order: an idempotency key already claimed is a reuse even when the queue is
// full; bounded names and tag lists; answers in the contract's envelope with the declared headers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { delayGraph, expectError, startTestServer, type TestServer } from "../server/helpers.ts";

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
    for (const id of ids) await s.api.post(`/api/v2/jobs/${id}/cancel`);
  });

  it("IDEM: a submission arriving while the first with its key is being written is a reuse, not queue_full", async () => {
    const waiting = [];
    while (s.runtime.dispatcher.queue.size < 3) waiting.push((await s.api.submit(delayGraph(60))).id);
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
