// The dispatcher's leased mode over a scripted JobLeases port (the database side is tested on
// PostgreSQL in test/store/postgres/leases.test.ts): jobs another node queued are claimed and run
// under the claim's fence, a claim whose answer was lost is read back and run before the next
// claim, the heartbeat stops a run the database no longer shows as running here, and a stop gives
// the leases of what it did not finish up.
import { afterEach, describe, expect, it } from "vitest";
import type { ClaimedJob, JobLeases, JobStatus, OwnerCounts, Store } from "../../src/store/index.ts";
import { openJobStore, queuedJob, type JobStore } from "../fixtures/job-store.ts";
import { openJobSystem, type JobSystem } from "../fixtures/job-system.ts";

const WORKER = "worker-1";

/**
 * JobLeases over one process's store: a claim takes the oldest queued job (no fair order, no
 * slots: that is the database's part) and moves it to running; the test can make the next
 * claim's answer get lost after it committed, and make renewals report a job's status.
 */
class ScriptedLeases implements JobLeases {
  readonly renewals: Array<{ ids: string[]; leaseMs: number }> = [];
  /** The next claim commits, then fails as a dropped connection would. */
  loseNextAnswer = false;
  /** Statuses renewals report instead of the store's. */
  readonly reported = new Map<string, JobStatus>();
  /** While set, claims wait for it (a claim under way), told through `claimWaits`. */
  claimGate: Promise<void> | null = null;
  claimWaits: (() => void) | null = null;
  private readonly store: Store;
  private readonly claims = new Map<string, { workerId: string; epoch: number }>();
  private epoch = 0;

  constructor(store: Store) {
    this.store = store;
  }

  async claim(workerId: string, _leaseMs: number, startedAt: number): Promise<ClaimedJob | null> {
    const [next] = await this.store.queuedJobs(1);
    if (!next) return null;
    const job = await this.store.transitionJob(next.id, ["queued"], "running", { started_at: startedAt });
    if (!job) return null;
    const claimed = { workerId, epoch: ++this.epoch };
    this.claims.set(job.id, claimed);
    if (this.loseNextAnswer) {
      this.loseNextAnswer = false;
      throw new Error("connection terminated unexpectedly");
    }
    return { job, epoch: claimed.epoch };
  }

  /** Claims one job after another, up to `limit`; a lost answer loses the whole batch's. */
  async claimMany(
    workerId: string,
    leaseMs: number,
    startedAt: number,
    _slots: unknown,
    _heldSecrets: readonly string[],
    _onlyHeld: boolean,
    limit: number,
  ): Promise<ClaimedJob[]> {
    if (this.claimGate) {
      this.claimWaits?.();
      await this.claimGate;
    }
    const claimed: ClaimedJob[] = [];
    while (claimed.length < limit) {
      const next = await this.claim(workerId, leaseMs, startedAt);
      if (!next) break;
      claimed.push(next);
    }
    return claimed;
  }

  /** The next queued job nobody claimed, left queued under this claim (an engine with a queue of its own). */
  async claimQueued(workerId: string): Promise<ClaimedJob | null> {
    const next = (await this.store.queuedJobs(1000)).find((j) => !this.claims.has(j.id));
    if (!next) return null;
    const claimed = { workerId, epoch: ++this.epoch };
    this.claims.set(next.id, claimed);
    return { job: next, epoch: claimed.epoch };
  }

  async heldBy(workerId: string): Promise<ClaimedJob[]> {
    const held: ClaimedJob[] = [];
    for (const [id, c] of this.claims) {
      const job = await this.store.getJob(id);
      if (c.workerId === workerId && job && (job.status === "running" || job.status === "canceling")) held.push({ job, epoch: c.epoch });
    }
    return held;
  }

  async position(jobId: string): Promise<number | null> {
    const queued = await this.store.queuedJobs(1000);
    const at = queued.findIndex((j) => j.id === jobId);
    return at < 0 ? null : at;
  }

  async queueCounts(): Promise<OwnerCounts[]> {
    return [];
  }

  async liveCount(): Promise<number> {
    return 0;
  }

  async renew(workerId: string, ids: readonly string[], leaseMs: number): Promise<Map<string, JobStatus>> {
    this.renewals.push({ ids: [...ids], leaseMs });
    const held = new Map<string, JobStatus>();
    for (const id of ids) {
      const job = await this.store.getJob(id);
      if (job && this.claims.get(id)?.workerId === workerId) held.set(id, this.reported.get(id) ?? job.status);
    }
    return held;
  }

  async failExpired(): Promise<[]> {
    return [];
  }

  /** Jobs given up by a stop. */
  readonly released: string[][] = [];

  async release(_workerId: string, ids: readonly string[]): Promise<void> {
    this.released.push([...ids]);
  }

  async adoptExpired(): Promise<[]> {
    return [];
  }

  async heldByOthers(): Promise<string[]> {
    return [];
  }

  async notQueued(ids: readonly string[]): Promise<string[]> {
    const gone: string[] = [];
    for (const id of ids) if ((await this.store.getJob(id))?.status !== "queued") gone.push(id);
    return gone;
  }

  async close(): Promise<void> {}
}

let data: JobStore | undefined;
let s: JobSystem | undefined;
afterEach(async () => {
  await s?.close();
  await data?.close();
  s = data = undefined;
});

async function leased(log?: (line: string) => void): Promise<{ s: JobSystem; leases: ScriptedLeases }> {
  data = await openJobStore("leased", { memory: true });
  const leases = new ScriptedLeases(data.store);
  s = await openJobSystem({ data, concurrency: 1, lease: { leases, workerId: WORKER, leaseMs: 150, dispatch: true }, ...(log ? { log } : {}) });
  return { s, leases };
}

describe("Dispatcher with leases", () => {
  it("claims a job another node queued and runs it to its end", async () => {
    const { s } = await leased();
    const job = await queuedJob(s.data.store, "from-elsewhere");
    // Nothing enqueued here: the heartbeat's fill finds it in the database.
    (await s.engine.started(job.id)).end({ kind: "succeeded" });
    await s.status(job.id, "succeeded");
    expect(s.dispatcher.sharesQueue).toBe(true);
  });

  it("runs a job whose claim committed though its answer was lost, before claiming another", async () => {
    const lines: string[] = [];
    const { s, leases } = await leased((line) => lines.push(line));
    leases.loseNextAnswer = true;
    const lost = await queuedJob(s.data.store, "lost-answer");
    const next = await queuedJob(s.data.store, "next");
    (await s.engine.started(lost.id)).end({ kind: "succeeded" });
    (await s.engine.started(next.id)).end({ kind: "succeeded" });
    await s.status(next.id, "succeeded");
    expect(s.engine.startOrder).toEqual([lost.id, next.id]);
    expect((await s.data.store.getJob(lost.id))?.status).toBe("succeeded");
    expect(lines.some((l) => l.includes("lost-answer") && l.includes("answer was lost"))).toBe(true);
  });

  it("stops a run at the heartbeat once the database shows its job canceling", async () => {
    const { s, leases } = await leased();
    const job = await queuedJob(s.data.store, "canceled-elsewhere");
    const run = await s.engine.started(job.id);
    // Another node's cancel: the row says canceling, the renewal tells this worker.
    await s.data.store.transitionJob(job.id, ["running"], "canceling");
    leases.reported.set(job.id, "canceling");
    await run.ended;
    expect(run.signal.aborted).toBe(true);
    await s.status(job.id, "canceled");
  });

  it("gives the leases of its unfinished runs up when it stops", async () => {
    const { s, leases } = await leased();
    const job = await queuedJob(s.data.store, "unfinished");
    const run = await s.engine.started(job.id);
    await s.dispatcher.stop(0);
    expect(run.signal.aborted).toBe(true);
    expect(leases.released).toEqual([[job.id]]);
  });

  it("claims the next job while a run's end commits, and no more runs end at once than it has slots", async () => {
    const { s, leases } = await leased(); // one slot
    // Ends wait here until released, each one told as it arrives.
    const ending: string[] = [];
    const arrived: Array<() => void> = [];
    const releases = new Map<string, () => void>();
    const original = s.data.store.transitionJob.bind(s.data.store);
    s.data.store.transitionJob = async (id, from, to, patch, options) => {
      if (to === "succeeded") {
        ending.push(id);
        await new Promise<void>((release) => {
          releases.set(id, release);
          arrived.shift()?.();
        });
      }
      return original(id, from, to, patch, options);
    };
    const endArrives = () => new Promise<void>((r) => arrived.push(r));
    const [a, b, c] = [await queuedJob(s.data.store, "a"), await queuedJob(s.data.store, "b"), await queuedJob(s.data.store, "c")];

    let arrival = endArrives();
    (await s.engine.started(a.id)).end({ kind: "succeeded" });
    await arrival;
    // a's end is committing: its slot is free for b, whose engine starts meanwhile.
    const runB = await s.engine.started(b.id);
    expect(ending).toEqual([a.id]);

    // b's end commits too: two runs ending with one slot, so nothing is claimed until one lands.
    let claimedEarly = false;
    let open!: () => void;
    leases.claimGate = new Promise<void>((r) => (open = r));
    leases.claimWaits = () => (claimedEarly = true);
    arrival = endArrives();
    runB.end({ kind: "succeeded" });
    await arrival;
    expect(claimedEarly).toBe(false);
    leases.claimGate = null;
    leases.claimWaits = null;
    open();

    releases.get(a.id)!();
    await s.status(a.id, "succeeded");
    arrival = endArrives();
    (await s.engine.started(c.id)).end({ kind: "succeeded" });
    await arrival;
    releases.get(b.id)!();
    releases.get(c.id)!();
    await s.status(b.id, "succeeded");
    await s.status(c.id, "succeeded");
  });

  it("gives up the lease of a job whose claim was under way when it stopped, not a lease later", async () => {
    const { s, leases } = await leased();
    let open!: () => void;
    leases.claimGate = new Promise<void>((r) => (open = r));
    const waiting = new Promise<void>((r) => (leases.claimWaits = r));
    const job = await queuedJob(s.data.store, "claimed-as-it-stops");
    await waiting; // the heartbeat's fill is claiming it
    const stopping = s.dispatcher.stop(0);
    open();
    await stopping;
    expect(leases.released).toEqual([[job.id]]);
  });
});
