import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobRecord } from "../../src/store/index.ts";
import { HOUR, T0, blobKey, newAsset, newJob, openTestStore } from "./helpers.ts";
import type { TestStore } from "./helpers.ts";

let t: TestStore;
beforeEach(async () => {
  t = await openTestStore();
});
afterEach(async () => {
  await t.cleanup();
});

const EXPIRY = T0 + 7 * 24 * HOUR;

async function finished(expiresAt: number): Promise<JobRecord> {
  const job = await t.store.createJob(newJob({ expires_at: expiresAt }));
  await t.store.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 1 });
  return (await t.store.transitionJob(job.id, ["running"], "succeeded", { completed_at: T0 + 2 }))!;
}

describe("expireJobs", () => {
  it("expires every live job at or past its expires_at, and nothing else", async () => {
    const queued = await t.store.createJob(newJob({ expires_at: EXPIRY }));
    const running = await t.store.createJob(newJob({ expires_at: EXPIRY - 1 }));
    await t.store.transitionJob(running.id, ["queued"], "running", { started_at: T0 + 1 });
    const canceling = await t.store.createJob(newJob({ expires_at: EXPIRY }));
    await t.store.transitionJob(canceling.id, ["queued"], "running", { started_at: T0 + 1 });
    await t.store.transitionJob(canceling.id, ["running"], "canceling");
    const notYet = await t.store.createJob(newJob({ expires_at: EXPIRY + 1 }));
    const done = await finished(EXPIRY - 10);

    const expired = await t.store.expireJobs(EXPIRY);
    expect(expired.map((j) => j.id)).toEqual([queued.id, running.id, canceling.id]);
    expect(expired.every((j) => j.status === "expired" && j.completed_at === EXPIRY)).toBe(true);
    expect(await t.store.getJob(running.id)).toMatchObject({ status: "expired", started_at: T0 + 1, completed_at: EXPIRY });
    expect((await t.store.getJob(notYet.id))?.status).toBe("queued");
    expect(await t.store.getJob(done.id)).toEqual(done);
    expect(await t.store.expireJobs(EXPIRY)).toEqual([]);
    expect(await t.store.countQueued()).toBe(1);
  });

  it("expires at most `limit` jobs a call, earliest expiry first", async () => {
    const jobs = [];
    for (let i = 0; i < 5; i++) jobs.push(await t.store.createJob(newJob({ expires_at: EXPIRY - i })));
    const first = await t.store.expireJobs(EXPIRY, 2);
    expect(first.map((j) => j.id)).toEqual([jobs[3]!.id, jobs[4]!.id]);
    expect((await t.store.expireJobs(EXPIRY, 2)).map((j) => j.id)).toEqual([jobs[1]!.id, jobs[2]!.id]);
    expect((await t.store.expireJobs(EXPIRY, 2)).map((j) => j.id)).toEqual([jobs[0]!.id]);
    expect(await t.store.countQueued()).toBe(0);
    await expect(t.store.expireJobs(EXPIRY, 0)).rejects.toBeInstanceOf(RangeError);
  });
});

describe("purgeExpired", () => {
  it("deletes finished jobs past expiry with their outputs, reporting blobs left unreferenced", async () => {
    const old = await finished(EXPIRY);
    const outA = await t.store.addAsset(newAsset({ job_id: old.id, blob_key: blobKey("1") }));
    const outB = await t.store.addAsset(newAsset({ job_id: old.id, blob_key: blobKey("2") }));
    // Blob 2 is also an upload of another record that stays: it must not be reported.
    await t.store.addAsset(newAsset({ folder: "input", blob_key: blobKey("2"), expires_at: EXPIRY + HOUR }));
    const young = await finished(EXPIRY + 1);
    const youngOut = await t.store.addAsset(newAsset({ job_id: young.id, blob_key: blobKey("3") }));

    const result = await t.store.purgeExpired(EXPIRY);
    expect(result.job_ids).toEqual([old.id]);
    expect(result.asset_ids.sort()).toEqual([outA.id, outB.id].sort());
    expect(result.unreferenced_blob_keys).toEqual([blobKey("1")]);
    expect(result.more).toBe(false);
    expect(await t.store.getJob(old.id)).toBeNull();
    expect(await t.store.getJobWorkflow(old.id)).toBeNull();
    expect(await t.store.getAsset(outA.id)).toBeNull();
    expect(await t.store.listJobOutputs(old.id)).toEqual([]);
    expect(await t.store.getJob(young.id)).toEqual(young);
    expect(await t.store.getAsset(youngOut.id)).toEqual(youngOut);
    expect(await t.store.blobReferenced(blobKey("2"))).toBe(true);
  });

  it("leaves live jobs past expiry to expireJobs first", async () => {
    const stuck = await t.store.createJob(newJob({ expires_at: EXPIRY }));
    expect((await t.store.purgeExpired(EXPIRY + HOUR)).job_ids).toEqual([]);
    await t.store.expireJobs(EXPIRY + HOUR);
    expect((await t.store.purgeExpired(EXPIRY + HOUR)).job_ids).toEqual([stuck.id]);
  });

  it("deletes expired uploads, keeps fresh and unexpiring ones", async () => {
    const stale = await t.store.addAsset(newAsset({ folder: "input", blob_key: blobKey("4"), expires_at: EXPIRY }));
    const fresh = await t.store.addAsset(newAsset({ folder: "input", blob_key: blobKey("5"), expires_at: EXPIRY + 1 }));
    const forever = await t.store.addAsset(newAsset({ folder: "input", blob_key: blobKey("6") }));
    const result = await t.store.purgeExpired(EXPIRY);
    expect(result).toEqual({ job_ids: [], asset_ids: [stale.id], unreferenced_blob_keys: [blobKey("4")], more: false });
    expect(await t.store.getAsset(fresh.id)).toEqual(fresh);
    expect(await t.store.getAsset(forever.id)).toEqual(forever);
  });

  it("honours a grace period", async () => {
    const job = await finished(EXPIRY);
    const upload = await t.store.addAsset(newAsset({ folder: "input", blob_key: blobKey("7"), expires_at: EXPIRY }));
    expect(await t.store.purgeExpired(EXPIRY + HOUR - 1, { graceMs: HOUR })).toEqual({ job_ids: [], asset_ids: [], unreferenced_blob_keys: [], more: false });
    const result = await t.store.purgeExpired(EXPIRY + HOUR, { graceMs: HOUR });
    expect(result.job_ids).toEqual([job.id]);
    expect(result.asset_ids).toEqual([upload.id]);
  });

  it("deletes expired idempotency claims only", async () => {
    await t.store.claimIdempotencyKey("alice", "old", T0, 1000);
    await t.store.claimIdempotencyKey("alice", "new", T0, 5000);
    await t.store.purgeExpired(T0 + 1000);
    const keys = (await t.sql("SELECT key FROM idempotency_keys ORDER BY key")).map((r) => r.key);
    expect(keys).toEqual(["new"]);
  });

  it("works in bounded batches and says when more is due", async () => {
    const jobs: JobRecord[] = [];
    for (let i = 0; i < 5; i++) jobs.push(await finished(EXPIRY - 5 + i));
    const first = await t.store.purgeExpired(EXPIRY, { limit: 2 });
    expect(first.job_ids).toEqual([jobs[0]!.id, jobs[1]!.id]);
    expect(first.more).toBe(true);
    const second = await t.store.purgeExpired(EXPIRY, { limit: 2 });
    const third = await t.store.purgeExpired(EXPIRY, { limit: 2 });
    expect([...second.job_ids, ...third.job_ids]).toEqual(jobs.slice(2).map((j) => j.id));
    expect(third.more).toBe(false);
    await expect(t.store.purgeExpired(EXPIRY, { limit: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(t.store.purgeExpired(EXPIRY, { graceMs: -1 })).rejects.toBeInstanceOf(RangeError);
  });
});
