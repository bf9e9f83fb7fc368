import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Worker } from "node:worker_threads";
import { IDEMPOTENCY_TTL_MS, IdempotencyKeyReused, QueueFullError, openStore } from "../../src/store/index.ts";
import { T0, newJob, openTestStore, storeKind } from "./helpers.ts";
import type { TestStore } from "./helpers.ts";

let t: TestStore;
beforeEach(async () => {
  t = await openTestStore();
});
afterEach(async () => {
  await t.cleanup();
});

const countJobs = async (owner = "alice") => (await t.store.listJobs(owner, { limit: 1000 })).jobs.length;

describe("createJob with an idempotency key", () => {
  it("creates once and rejects every later use of the key, inserting nothing", async () => {
    const first = await t.store.createJob(newJob(), { idempotency: { key: "k", now: T0 } });
    const claim = await t.store.getIdempotencyClaim("alice", "k", T0);
    expect(claim).toEqual({ owner: "alice", key: "k", job_id: first.id, claimed_at: T0, expires_at: T0 + IDEMPOTENCY_TTL_MS });

    const retry = newJob();
    const error = await t.store.createJob(retry, { idempotency: { key: "k", now: T0 + 1 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IdempotencyKeyReused);
    expect((error as IdempotencyKeyReused).jobId).toBe(first.id);
    expect(await t.store.getJob(retry.id)).toBeNull();
    expect(await countJobs()).toBe(1);
    expect(await t.store.getIdempotencyClaim("alice", "k", T0 + 1)).toEqual(claim);
  });

  it("scopes keys by owner", async () => {
    await t.store.createJob(newJob(), { idempotency: { key: "shared", now: T0 } });
    await t.store.createJob(newJob({ owner: "bob" }), { idempotency: { key: "shared", now: T0 } });
    await t.store.createJob(newJob({ owner: "" }), { idempotency: { key: "shared", now: T0 } });
    expect((await countJobs("alice")) + (await countJobs("bob")) + (await countJobs(""))).toBe(3);
  });

  it("replaces an expired claim and keeps an unexpired one, by the injected clock", async () => {
    const first = await t.store.createJob(newJob(), { idempotency: { key: "k", now: T0, ttlMs: 1000 } });
    await expect(t.store.createJob(newJob(), { idempotency: { key: "k", now: T0 + 999 } })).rejects.toBeInstanceOf(IdempotencyKeyReused);
    expect(await t.store.getIdempotencyClaim("alice", "k", T0 + 1000)).toBeNull();
    const second = await t.store.createJob(newJob(), { idempotency: { key: "k", now: T0 + 1000 } });
    expect(await t.store.getIdempotencyClaim("alice", "k", T0 + 1000)).toMatchObject({ job_id: second.id, claimed_at: T0 + 1000 });
    expect(second.id).not.toBe(first.id);
    expect(await countJobs()).toBe(2);
  });

  it("lets exactly one of 50 concurrent same-key submissions through", async () => {
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => t.store.createJob(newJob(), { idempotency: { key: "burst", now: T0 } })));
    const created = results.filter((r) => r.status === "fulfilled");
    const rejected = results.filter((r) => r.status === "rejected");
    expect(created).toHaveLength(1);
    expect(rejected.every((r) => r.reason instanceof IdempotencyKeyReused)).toBe(true);
    expect(await countJobs()).toBe(1);
  });

  it("lets exactly one submission through when several connections race on the key", async () => {
    const workers = 4;
    const attempts = 25;
    const barrier = new SharedArrayBuffer(8);
    const gate = new Int32Array(barrier);
    const runs = Array.from({ length: workers }, () => {
      const worker = new Worker(new URL("./idempotency-worker.ts", import.meta.url), {
        workerData: { options: t.options, barrier, attempts, key: "cross", now: T0 },
      });
      return new Promise<{ created: string[]; reused: number }>((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
      });
    });
    // Release the workers together once all have opened their connection (polled, no sleep).
    const deadline = Date.now() + 20_000;
    while (Atomics.load(gate, 0) < workers && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    expect(Atomics.load(gate, 0)).toBe(workers);
    Atomics.store(gate, 1, 1);
    Atomics.notify(gate, 1);

    const outcomes = await Promise.all(runs);
    const created = outcomes.flatMap((o) => o.created);
    expect(created).toHaveLength(1);
    expect(outcomes.reduce((n, o) => n + o.reused, 0)).toBe(workers * attempts - 1);
    expect((await t.store.listJobs("racer", { limit: 1000 })).jobs.map((j) => j.id)).toEqual(created);
  });

  it("rolls the claim back when the job insert fails", async () => {
    const job = await t.store.createJob(newJob());
    await expect(t.store.createJob({ ...job, workflow: {}, output_node_ids: [] }, { idempotency: { key: "k", now: T0 } })).rejects.toThrow();
    expect(await t.store.getIdempotencyClaim("alice", "k", T0)).toBeNull();
    await t.store.createJob(newJob(), { idempotency: { key: "k", now: T0 } });
  });
});

describe("claim before an upstream call", () => {
  it("claims, refuses others meanwhile, then binds the held claim to the job", async () => {
    const claim = await t.store.claimIdempotencyKey("alice", "k", T0);
    expect(claim).toEqual({ owner: "alice", key: "k", job_id: null, claimed_at: T0, expires_at: T0 + IDEMPOTENCY_TTL_MS });
    const meanwhile = await t.store.createJob(newJob(), { idempotency: { key: "k", now: T0 + 1 } }).catch((e: unknown) => e);
    expect(meanwhile).toBeInstanceOf(IdempotencyKeyReused);
    expect((meanwhile as IdempotencyKeyReused).jobId).toBeNull();
    await expect(t.store.claimIdempotencyKey("alice", "k", T0 + 1)).rejects.toBeInstanceOf(IdempotencyKeyReused);

    const job = await t.store.createJob(newJob(), { idempotency: { key: "k", now: T0 + 2, held: true } });
    expect(await t.store.getIdempotencyClaim("alice", "k", T0 + 2)).toMatchObject({ job_id: job.id, claimed_at: T0 });
    // Bound now: neither a second held bind nor a release can reopen it.
    await expect(t.store.createJob(newJob(), { idempotency: { key: "k", now: T0 + 3, held: true } })).rejects.toBeInstanceOf(IdempotencyKeyReused);
    expect(await t.store.releaseIdempotencyKey("alice", "k")).toBe(false);
    expect(await countJobs()).toBe(1);
  });

  it("releases a claim no job was created under, so a retry proceeds", async () => {
    await t.store.claimIdempotencyKey("alice", "k", T0);
    expect(await t.store.releaseIdempotencyKey("alice", "k")).toBe(true);
    expect(await t.store.releaseIdempotencyKey("alice", "k")).toBe(false);
    await t.store.createJob(newJob(), { idempotency: { key: "k", now: T0 + 1 } });
    expect(await countJobs()).toBe(1);
  });

  it("treats a held claim that expired like a fresh one", async () => {
    await t.store.claimIdempotencyKey("alice", "k", T0, 1000);
    const job = await t.store.createJob(newJob(), { idempotency: { key: "k", now: T0 + 5000, held: true } });
    expect(await t.store.getIdempotencyClaim("alice", "k", T0 + 5000)).toMatchObject({ job_id: job.id, claimed_at: T0 + 5000 });
  });

  it("refuses malformed claim input", async () => {
    await expect(t.store.claimIdempotencyKey("alice", "", T0)).rejects.toThrow(TypeError);
    await expect(t.store.claimIdempotencyKey("alice", "k", Number.NaN)).rejects.toThrow(TypeError);
    await expect(t.store.claimIdempotencyKey("alice", "k", T0, 0)).rejects.toThrow(RangeError);
  });
});

describe("batched inserts", () => {
  it("fails only the submissions that reuse a key when one turn's submissions share a transaction", async () => {
    const keys = ["a", "b", "a", "c", "b", "d"];
    const results = await Promise.allSettled(keys.map((key) => t.store.createJob(newJob(), { idempotency: { key, now: T0 } })));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "rejected", "fulfilled"]);
    const created = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    // Insert order is submission order, and every created job holds its key.
    expect(created.map((j) => j.seq)).toEqual([...created.map((j) => j.seq)].sort((x, y) => x - y));
    for (const [i, key] of ["a", "b", "c", "d"].entries()) {
      expect(await t.store.getIdempotencyClaim("alice", key, T0)).toMatchObject({ job_id: created[i]!.id });
    }
    expect(await countJobs()).toBe(4);
    // A second connection sees every acknowledged job: they were committed before the promises resolved.
    expect(await t.sql("SELECT count(*) AS n FROM jobs")).toEqual([{ n: 4 }]);
  });

  it("fails only the submission whose key is taken when a turn's keys are distinct, and replaces an expired claim", async () => {
    const earlier = await t.store.createJob(newJob(), { idempotency: { key: "b", now: T0 } });
    await t.store.createJob(newJob(), { idempotency: { key: "c", now: T0, ttlMs: 10 } });
    const keys = ["a", "b", "c", "d"];
    const results = await Promise.allSettled(keys.map((key) => t.store.createJob(newJob(), { idempotency: { key, now: T0 + 10 } })));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    const refused = (results[1] as PromiseRejectedResult).reason as IdempotencyKeyReused;
    expect(refused).toBeInstanceOf(IdempotencyKeyReused);
    expect(refused.jobId).toBe(earlier.id);
    const created = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    expect(created.map((j) => j.seq)).toEqual([...created.map((j) => j.seq)].sort((x, y) => x - y));
    for (const [i, key] of ["a", "c", "d"].entries()) {
      expect(await t.store.getIdempotencyClaim("alice", key, T0 + 10)).toMatchObject({ job_id: created[i]!.id, claimed_at: T0 + 10 });
    }
    expect(await t.store.getIdempotencyClaim("alice", "b", T0 + 10)).toMatchObject({ job_id: earlier.id, claimed_at: T0 });
    expect(await countJobs()).toBe(5);
  });

  it("commits a waiting batch when the store closes", async () => {
    const pending = t.store.createJob(newJob());
    await t.store.close();
    const job = await pending;
    const reopened = await t.reopen();
    expect(await reopened.getJob(job.id)).toEqual(job);
  });
});

// SQLite has one owning process, whose own count is exact: the option is for shared stores.
describe.runIf(storeKind() === "postgres")("the queue bound across processes", () => {
  it("admits exactly queueLimit jobs when two connections submit at once", async () => {
    const other = await openStore(t.options);
    try {
      await t.store.createJob(newJob());
      const submit = (store: typeof other) => store.createJob(newJob(), { queueLimit: 5 });
      const results = await Promise.allSettled([...Array.from({ length: 8 }, () => submit(t.store)), ...Array.from({ length: 8 }, () => submit(other))]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(4);
      expect(results.filter((r) => r.status === "rejected").every((r) => r.reason instanceof QueueFullError)).toBe(true);
      expect(await t.store.countQueued()).toBe(5);
      // A refused submission took no idempotency claim.
      await expect(t.store.createJob(newJob(), { queueLimit: 5, idempotency: { key: "full", now: T0 } })).rejects.toBeInstanceOf(QueueFullError);
      expect(await t.store.getIdempotencyClaim("alice", "full", T0)).toBeNull();
    } finally {
      await other.close();
    }
  });

  it("lets the queue go after a bounded batch fails, for this connection and others", async () => {
    const other = await openStore(t.options);
    try {
      const job = await t.store.createJob(newJob(), { queueLimit: 5 });
      // A duplicate id fails the batch (then its retry): the lock it took must not outlive it.
      await expect(t.store.createJob({ ...newJob(), id: job.id }, { queueLimit: 5 })).rejects.toThrow();
      await expect(other.createJob(newJob(), { queueLimit: 5 })).resolves.toMatchObject({ status: "queued" });
      await expect(t.store.createJob(newJob(), { queueLimit: 5 })).resolves.toMatchObject({ status: "queued" });
      expect(await t.store.countQueued()).toBe(3);
    } finally {
      await other.close();
    }
  });

  it("keeps the bound exact when one process's batch goes in one statement and another's is counted", async () => {
    const other = await openStore(t.options);
    try {
      // Far below the bound: a batch of 12 is one statement (the lock, the span, the insert).
      const first = await Promise.all(
        Array.from({ length: 12 }, (_, i) => t.store.createJob(newJob(), { queueLimit: 20, idempotency: { key: `a${i}`, now: T0 } })),
      );
      expect(first.every((j) => j.status === "queued")).toBe(true);
      // Then both at once near it: the span leaves no certain room, so they count under the lock.
      const submit = (store: typeof other, i: number) => store.createJob(newJob(), { queueLimit: 20, idempotency: { key: `b${i}`, now: T0 } });
      const results = await Promise.allSettled([
        ...Array.from({ length: 6 }, (_, i) => submit(t.store, i)),
        ...Array.from({ length: 6 }, (_, i) => submit(other, 6 + i)),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(8);
      expect(results.filter((r) => r.status === "rejected").every((r) => r.reason instanceof QueueFullError)).toBe(true);
      expect(await t.store.countQueued()).toBe(20);
      // A refused submission's key was not taken; an admitted one's was.
      const claims = await Promise.all(Array.from({ length: 12 }, (_, i) => t.store.getIdempotencyClaim("alice", `b${i}`, T0)));
      expect(claims.filter((c) => c !== null)).toHaveLength(8);
      // A reused key in a one-statement batch fails only its own submission.
      await t.store.transitionJob(first[0]!.id, ["queued"], "canceled", { completed_at: T0 });
      await t.store.transitionJob(first[1]!.id, ["queued"], "canceled", { completed_at: T0 });
      const again = await Promise.allSettled([
        t.store.createJob(newJob(), { queueLimit: 100, idempotency: { key: "a2", now: T0 } }),
        t.store.createJob(newJob(), { queueLimit: 100, idempotency: { key: "c", now: T0 } }),
      ]);
      expect(again[0]).toMatchObject({ status: "rejected", reason: { jobId: first[2]!.id } });
      expect((again[0] as PromiseRejectedResult).reason).toBeInstanceOf(IdempotencyKeyReused);
      expect(again[1]).toMatchObject({ status: "fulfilled", value: { status: "queued" } });
    } finally {
      await other.close();
    }
  });

  it("counts the queue exactly when jobs that left it lie between the queued ones", async () => {
    // Queued seqs 1 and 5 span five jobs; two are queued, so three more fit under a bound of 5.
    await t.store.createJob(newJob());
    for (let i = 0; i < 3; i++) {
      const job = await t.store.createJob(newJob());
      await t.store.transitionJob(job.id, ["queued"], "canceled", { completed_at: T0 });
    }
    await t.store.createJob(newJob());
    const results = await Promise.allSettled(Array.from({ length: 4 }, () => t.store.createJob(newJob(), { queueLimit: 5 })));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "rejected"]);
    expect((results[3] as PromiseRejectedResult).reason).toBeInstanceOf(QueueFullError);
    expect(await t.store.countQueued()).toBe(5);
    // Far below the bound, a whole batch is admitted.
    const more = await Promise.all(Array.from({ length: 3 }, () => t.store.createJob(newJob(), { queueLimit: 100 })));
    expect(more.every((j) => j.status === "queued")).toBe(true);
    expect(await t.store.countQueued()).toBe(8);
  });
});
