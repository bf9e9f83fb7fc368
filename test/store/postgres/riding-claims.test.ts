// A worker's claim riding its runs' ends (issue #48, Store.carryClaims): the ends' statement claims
// the next jobs in the same transaction, in the fair order, counting the ends' jobs as no longer
// running. Real PostgreSQL; which transaction wrote a row is read from its xmin.
import { describe, expect, it } from "vitest";
import type { ClaimRider, RiddenClaim, RidingClaim, RunFence } from "../../../src/store/index.ts";
import { adminQuery, postgresUnavailable } from "../../postgres/pg.ts";
import { blobKey, newAsset, newJob, T0 } from "../helpers.ts";
import { leasedStore } from "./leased-store.ts";

const unavailable = await postgresUnavailable();
const t = leasedStore(unavailable);

/** A rider that asks `limit` jobs for worker "wa" with every batch, and keeps what it was told. */
function rider(limit: number | null): ClaimRider & { asked: string[][]; answers: Array<RiddenClaim | { error: unknown }> } {
  const asked: string[][] = [];
  const answers: Array<RiddenClaim | { error: unknown }> = [];
  return {
    asked,
    answers,
    ask(jobIds) {
      asked.push([...jobIds]);
      return limit === null ? null : { workerId: "wa", leaseMs: 30_000, startedAt: T0 + 5, heldSecrets: [], limit };
    },
    answered(_claim: RidingClaim, outcome) {
      answers.push(outcome);
    },
  };
}

const end = (id: string, fence: RunFence, asset = newAsset({ job_id: id, blob_key: blobKey("c") })) =>
  t.store.transitionJobWithAssets(id, ["running"], "succeeded", { completed_at: T0 + 1 }, [asset], [], fence);

/** The transaction that last wrote each job's row, in the order of `ids`. */
async function writers(ids: readonly string[]): Promise<string[]> {
  const rows = await adminQuery(`SELECT id, xmin::text AS x FROM ${t.schema}.jobs WHERE id = ANY($1)`, [ids]);
  return ids.map((id) => rows.find((r) => r.id === id)!.x as string);
}

describe.skipIf(unavailable !== null)("a claim riding runs' ends (PostgreSQL)", () => {
  it("claims the next jobs in the ends' own transaction, and answers before the ends settle", async () => {
    const [one, two] = await t.runningJobs(2);
    const queued = [];
    for (let i = 0; i < 3; i++) queued.push(await t.store.createJob(newJob()));
    const r = rider(2);
    expect(t.store.carryClaims(r)).toBe(true);
    // Whether the claim was answered by the time each end settled.
    const answeredBy: boolean[] = [];
    const settled = (e: Awaited<ReturnType<typeof end>>) => {
      answeredBy.push(r.answers.length === 1);
      return e;
    };
    const ends = await Promise.all([end(one!.id, one!.fence).then(settled), end(two!.id, two!.fence).then(settled)]);
    expect(answeredBy).toEqual([true, true]);
    expect(ends.map((e) => e?.job.status)).toEqual(["succeeded", "succeeded"]);
    expect(r.asked).toEqual([[one!.id, two!.id]]);
    const answer = r.answers[0] as RiddenClaim;
    expect(answer.claimed.map((c) => c.job.id)).toEqual([queued[0]!.id, queued[1]!.id]);
    for (const c of answer.claimed) {
      expect(c.job.status).toBe("running");
      expect(c.job.started_at).toBe(T0 + 5);
      expect(c.workflow).toEqual(newJob().workflow);
      const row = await adminQuery(`SELECT worker_id, lease_epoch FROM ${t.schema}.jobs WHERE id = $1`, [c.job.id]);
      expect(row[0]).toEqual({ worker_id: "wa", lease_epoch: String(c.epoch) });
    }
    expect(answer.candidates).toBeGreaterThanOrEqual(2);
    expect((await t.store.getJob(queued[2]!.id))?.status).toBe("queued");
    expect(new Set(await writers([one!.id, two!.id, queued[0]!.id, queued[1]!.id])).size).toBe(1);
    // The claim's records: the ends' outputs were written with them.
    expect(await t.store.listJobOutputs(one!.id)).toHaveLength(1);
  });

  it("counts the ends' jobs as no longer running: an owner whose run just ended is not put behind", async () => {
    // Owner "a" runs one job (which ends now) and has one queued; owner "b" queued one after it.
    // Fair order once a's run ended: a's queued job (level 0, older) before b's (level 0, newer).
    await t.store.createJob(newJob({ owner: "a" }));
    const claimed = (await t.leases.claim("wa", 30_000, T0, undefined, []))!;
    const aNext = await t.store.createJob(newJob({ owner: "a" }));
    await t.store.createJob(newJob({ owner: "b" }));
    const r = rider(1);
    t.store.carryClaims(r);
    await end(claimed.job.id, { workerId: "wa", epoch: claimed.epoch }, newAsset({ owner: "a", job_id: claimed.job.id, blob_key: blobKey("c") }));
    expect((r.answers[0] as RiddenClaim).claimed.map((c) => c.job.id)).toEqual([aNext.id]);
  });

  it("a refused end still carries the claim; a rider that asks nothing gets the plain statement", async () => {
    const [one, two] = await t.runningJobs(2);
    const waiting = await t.store.createJob(newJob());
    const none = rider(null);
    t.store.carryClaims(none);
    await end(one!.id, one!.fence);
    expect(none.asked).toHaveLength(1);
    expect(none.answers).toEqual([]);
    expect((await t.store.getJob(waiting.id))?.status).toBe("queued");
    const r = rider(1);
    t.store.carryClaims(r);
    expect(await end(two!.id, { workerId: "wa", epoch: two!.fence.epoch + 1 })).toBeNull();
    expect((r.answers[0] as RiddenClaim).claimed.map((c) => c.job.id)).toEqual([waiting.id]);
    t.store.carryClaims(null);
  });

  it("a statement that fails tells the rider, claims nothing, and the ends then commit alone", async () => {
    const [one, two] = await t.runningJobs(2);
    const waiting = await t.store.createJob(newJob());
    const taken = newAsset({ job_id: two!.id, blob_key: blobKey("d") });
    await t.store.addAsset(taken, two!.fence);
    const r = rider(1);
    t.store.carryClaims(r);
    const [a, b] = await Promise.allSettled([end(one!.id, one!.fence), end(two!.id, two!.fence, { ...taken })]);
    expect(a.status === "fulfilled" && a.value?.job.status).toBe("succeeded");
    expect(b.status).toBe("rejected");
    expect(r.answers).toHaveLength(1);
    expect("error" in r.answers[0]!).toBe(true);
    expect((await t.store.getJob(waiting.id))?.status).toBe("queued");
  });

  it("ends that are not runs' (from queued) carry no claim", async () => {
    const job = await t.store.createJob(newJob());
    const waiting = await t.store.createJob(newJob());
    const r = rider(1);
    t.store.carryClaims(r);
    const ended = await t.store.transitionJobWithAssets(job.id, ["queued"], "failed", { completed_at: T0 + 1 }, [
      newAsset({ job_id: job.id, blob_key: blobKey("e") }),
    ]);
    expect(ended?.job.status).toBe("failed");
    expect(r.asked).toEqual([]);
    expect((await t.store.getJob(waiting.id))?.status).toBe("queued");
  });
});
