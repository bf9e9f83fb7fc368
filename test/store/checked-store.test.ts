// CheckedStore over a dialect that records its calls: a bad argument never reaches the database,
// and what does reach it is normalized (distinct statuses, defaults applied, a listing as a JobQuery).
import { describe, expect, it } from "vitest";
import { CheckedStore } from "../../src/store/checked-store.ts";
import { encodeCursor } from "../../src/store/cursor.ts";
import { InvalidCursorError } from "../../src/store/errors.ts";
import type { StoreDialect } from "../../src/store/store-dialect.ts";
import type { JobRecord } from "../../src/store/types.ts";
import { newJob } from "./helpers.ts";

/** A dialect whose every method records its arguments and answers from `answers` (else undefined). */
function recordingDialect(answers: Record<string, unknown> = {}): { dialect: StoreDialect; calls: Array<[string, unknown[]]> } {
  const calls: Array<[string, unknown[]]> = [];
  const dialect = new Proxy({} as StoreDialect, {
    get:
      (_, name: string) =>
      async (...args: unknown[]) => {
        calls.push([name, args]);
        return answers[name];
      },
  });
  return { dialect, calls };
}

const job = (seq: number) => ({ seq }) as JobRecord;

describe("CheckedStore", () => {
  it("refuses a malformed job, claim, asset or count without calling the dialect", async () => {
    const { dialect, calls } = recordingDialect();
    const store = new CheckedStore(dialect);
    await expect(store.createJob({ ...newJob(), id: "" })).rejects.toBeInstanceOf(TypeError);
    await expect(store.createJob(newJob(), { idempotency: { key: "k", now: 1, ttlMs: 0 } })).rejects.toBeInstanceOf(RangeError);
    await expect(store.createJob(newJob(), { queueLimit: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(store.claimIdempotencyKey("alice", "", 1)).rejects.toBeInstanceOf(TypeError);
    await expect(
      store.addAsset({
        id: "a",
        owner: "alice",
        name: "x",
        content_type: "image/png",
        size_bytes: -1,
        blob_key: "0".repeat(64),
        folder: "output",
        created_at: 1,
      }),
    ).rejects.toBeInstanceOf(TypeError);
    await expect(store.transitionJob("j", ["queued"], "nonsense" as never)).rejects.toBeInstanceOf(TypeError);
    await expect(store.queuedJobs(0)).rejects.toBeInstanceOf(RangeError);
    await expect(store.purgeExpired(1, { graceMs: -1 })).rejects.toBeInstanceOf(RangeError);
    await expect(store.listJobs("alice", { limit: 10, cursor: "not a cursor" })).rejects.toBeInstanceOf(InvalidCursorError);
    await expect(store.listJobs("alice", { limit: 10, metadata: { a: "1", b: "2", c: "3", d: "4" } })).rejects.toBeInstanceOf(RangeError);
    expect(calls).toEqual([]);
  });

  it("answers an empty status set itself", async () => {
    const { dialect, calls } = recordingDialect();
    const store = new CheckedStore(dialect);
    expect(await store.transitionJob("j", [], "running")).toBeNull();
    expect(await store.transitionJobWithAssets("j", [], "succeeded", {}, [])).toBeNull();
    expect(await store.jobsInStatus([])).toEqual([]);
    expect(await store.listJobs("alice", { limit: 10, status: [] })).toEqual({ jobs: [], next_cursor: null });
    expect(calls).toEqual([]);
  });

  it("hands the dialect distinct statuses and ids, and the defaults of optional counts", async () => {
    const { dialect, calls } = recordingDialect({ jobsInStatus: [], queuedJobs: [], expireJobs: [], pendingBlobs: [], hideFromHistory: 0 });
    const store = new CheckedStore(dialect);
    await store.jobsInStatus(["running", "canceling", "running"]);
    await store.hideFromHistory("alice", ["a", "b", "a"]);
    await store.queuedJobs();
    await store.expireJobs(5);
    await store.pendingBlobs();
    await store.purgeExpired(1000, { graceMs: 10 });
    expect(calls).toEqual([
      ["jobsInStatus", [["running", "canceling"]]],
      ["hideFromHistory", ["alice", ["a", "b"]]],
      ["queuedJobs", [1000, 0, undefined]],
      ["expireJobs", [5, 500]],
      ["pendingBlobs", ["", 100]],
      ["purgeExpired", [1000, 990, 500]],
    ]);
  });

  it("reads one row past the page and makes the cursor of its last job", async () => {
    const { dialect, calls } = recordingDialect({ listJobs: [job(9), job(7), job(4)] });
    const store = new CheckedStore(dialect);
    const page = await store.listJobs("alice", { limit: 2, status: ["queued", "queued"], cursor: encodeCursor(12), metadata: { team: "x" }, in_history: true });
    expect(page).toEqual({ jobs: [job(9), job(7)], next_cursor: encodeCursor(7) });
    expect(calls).toEqual([
      ["listJobs", ["alice", { fetch: 3, before: 12, statuses: ["queued"], labels: [["team", "x"]], deployment_id: undefined, in_history: true }]],
    ]);
  });

  it("ends the listing when the dialect returns no more than the page", async () => {
    const { dialect } = recordingDialect({ listJobs: [job(3)] });
    expect(await new CheckedStore(dialect).listJobs("alice", { limit: 2 })).toEqual({ jobs: [job(3)], next_cursor: null });
  });
});
