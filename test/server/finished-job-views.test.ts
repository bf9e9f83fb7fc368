// The cache of finished jobs' rendered views: what it may answer and when it must not.
import { describe, expect, it } from "vitest";
import { FinishedJobViews } from "../../src/server/v2/finished-job-views.ts";
import { linkExpiry } from "../../src/server/views.ts";
import type { JobRecord, JobStatus } from "../../src/store/index.ts";

const T = 1_800_000_000_000;
const LINKS = "|http://127.0.0.1:8189";

function job(status: JobStatus, over: Partial<JobRecord> = {}): JobRecord {
  return {
    seq: 1,
    id: "j1",
    owner: "alice",
    deployment_id: null,
    status,
    created_at: T,
    started_at: T,
    completed_at: T,
    expires_at: T + 3_600_000,
    progress: null,
    error: null,
    output_node_ids: ["9"],
    cost: null,
    metadata: {},
    workflow_id: null,
    updated_at: T,
    ...over,
  };
}

describe("FinishedJobViews", () => {
  it("answers the owner with the bytes it rendered, and nobody else", () => {
    const views = new FinishedJobViews();
    const body = views.render(job("succeeded"), LINKS, T + 60_000, { id: "j1" });
    expect(JSON.parse(body.toString())).toEqual({ id: "j1" });
    expect(views.get({ owner: "alice" }, "j1", LINKS, T + 60_000, T)).toBe(body);
    expect(views.get({ owner: "bob" }, "j1", LINKS, T + 60_000, T)).toBeUndefined();
    expect(views.get({ owner: "alice" }, "j2", LINKS, T + 60_000, T)).toBeUndefined();
    // Another mount or origin renders other links.
    expect(views.get({ owner: "alice" }, "j1", "/deployment/d|http://x", T + 60_000, T)).toBeUndefined();
  });

  it("holds what it keeps in bytes of their own, not in a 64 KiB pool slab a small view would keep alive", () => {
    const views = new FinishedJobViews();
    for (let i = 0; i < 50; i++) {
      const body = views.render(job("succeeded", { id: `j${i}` }), LINKS, T + 60_000, { id: `j${i}`, pad: "x".repeat(500) });
      // The kept view owns exactly its bytes: what the byte bound counts is what it holds.
      expect(body.buffer.byteLength).toBe(body.length);
    }
  });

  it("keeps a deployment's job to callers of that deployment", () => {
    const views = new FinishedJobViews();
    views.render(job("failed", { deployment_id: "d1" }), LINKS, T, {});
    expect(views.get({ owner: "alice", deployment_id: "d2" }, "j1", LINKS, T, T)).toBeUndefined();
    expect(views.get({ owner: "alice", deployment_id: "d1" }, "j1", LINKS, T, T)).toBeDefined();
  });

  it("never keeps a job that can still change", () => {
    const views = new FinishedJobViews();
    for (const status of ["queued", "running", "canceling"] as const) {
      views.render(job(status), LINKS, T, {});
      expect(views.get({ owner: "alice" }, "j1", LINKS, T, T)).toBeUndefined();
    }
    expect(views.bytes).toBe(0);
  });

  it("drops a view when its links roll over to the next expiry or the job passes retention", () => {
    const views = new FinishedJobViews();
    views.render(job("canceled"), LINKS, T, {});
    expect(views.get({ owner: "alice" }, "j1", LINKS, T + 60_000, T)).toBeUndefined();
    expect(views.get({ owner: "alice" }, "j1", LINKS, T, T)).toBeUndefined(); // dropped by the miss above
    views.render(job("canceled"), LINKS, T, {});
    expect(views.get({ owner: "alice" }, "j1", LINKS, T, T + 3_600_000)).toBeUndefined();
    expect(views.bytes).toBe(0);
  });

  it("holds at most its byte bound, evicting the least recently used", () => {
    const views = new FinishedJobViews(100);
    const view = { pad: "x".repeat(30) }; // 40 bytes of JSON
    views.render(job("succeeded", { id: "a" }), LINKS, T, view);
    views.render(job("succeeded", { id: "b" }), LINKS, T, view);
    expect(views.get({ owner: "alice" }, "a", LINKS, T, T)).toBeDefined(); // a is now the most recent
    views.render(job("succeeded", { id: "c" }), LINKS, T, view);
    expect(views.bytes).toBeLessThanOrEqual(100);
    expect(views.get({ owner: "alice" }, "b", LINKS, T, T)).toBeUndefined();
    expect(views.get({ owner: "alice" }, "a", LINKS, T, T)).toBeDefined();
    expect(views.get({ owner: "alice" }, "c", LINKS, T, T)).toBeDefined();
    views.render(job("succeeded", { id: "big" }), LINKS, T, { pad: "x".repeat(200) });
    expect(views.get({ owner: "alice" }, "big", LINKS, T, T)).toBeUndefined();
  });
});

describe("linkExpiry", () => {
  it("is at least the TTL away and at most one step (a sixtieth of the TTL, 1 to 60 s) more", () => {
    for (const [ttl, step] of [
      [3_600_000, 60_000],
      [600_000, 10_000],
      [30_000, 1000],
      [86_400_000, 60_000],
    ] as const) {
      for (const now of [T, T + 1, T + 59_999, T + 123_456]) {
        const at = linkExpiry(now, ttl);
        expect(at).toBeGreaterThanOrEqual(now + ttl);
        expect(at).toBeLessThan(now + ttl + step);
        expect(at % step).toBe(0);
      }
    }
  });
});
