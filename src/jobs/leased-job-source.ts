// The job source of a process sharing its database with others (PostgreSQL): a thin adapter over
// the store's JobLeases port. Jobs are claimed from the database, the next queued job of any
// node, under a lease this process renews on a heartbeat; the in-memory queue then only answers
// for the jobs this node knows, and positions and counts are read across every process.
import type { JobRecord, RunFence } from "../store/index.ts";
import type { LeaseOptions } from "./job-leases.ts";
import type { JobSource, RunStart, SourceHost } from "./job-source.ts";
import { SharedQueueCounts } from "./queue-counts.ts";

/** Local queue entries checked against the database per heartbeat (the front, where jobs leave). */
const PRUNE_BATCH = 1000;

/** Jobs claimed from the shared database under leases. */
export class LeasedJobSource implements JobSource {
  readonly shared = true;
  private readonly host: SourceHost;
  private readonly lease: LeaseOptions;
  /** The deployment's queue counts, for the positions of new jobs. */
  private readonly counts: SharedQueueCounts;
  /** A claim failed without an answer: it may have committed; the next claim reads back what this worker holds. */
  private claimUncertain = false;
  /** The heartbeat, and whether one is under way. */
  private heartbeat: NodeJS.Timeout | undefined;
  private beating = false;
  /** The last heartbeat's store calls failed (the next one tries again). */
  private beatFailed = false;
  /** Whether a run first waits in the engine's own queue (ComfyUI): its job is claimed while queued (claimQueued). */
  private readonly engineQueues: boolean;
  /** Runs of jobs claimed while queued, not started in the engine yet. */
  private readonly waitingInEngine = new Set<string>();

  constructor(host: SourceHost, lease: LeaseOptions, engineQueues = false) {
    this.host = host;
    this.lease = lease;
    this.engineQueues = engineQueues;
    this.counts = new SharedQueueCounts(() => lease.leases.queueCounts());
  }

  get failing(): boolean {
    return this.beatFailed;
  }

  /**
   * Nothing is recovered wholesale (other processes may be running the jobs); a job whose worker
   * died ends when its lease passes, found by the heartbeat of any process.
   */
  async start(): Promise<void> {
    // Often enough to renew a lease three times before it passes, and to pick up new jobs soon.
    const every = Math.max(50, Math.min(1000, Math.floor(this.lease.leaseMs / 3)));
    this.heartbeat = setInterval(() => void this.beat(), every);
    this.heartbeat.unref();
    await this.beat();
  }

  /**
   * One heartbeat: renews this worker's leases and aborts the runs it no longer holds or that a
   * cancel on any node moved to `canceling`; fails the jobs whose lease passed; drops from the
   * local queue the jobs gone from the database's; then looks for work (other nodes' submissions).
   */
  private async beat(): Promise<void> {
    if (this.beating) return;
    this.beating = true;
    const { leases, workerId, leaseMs } = this.lease;
    const { queue, secrets } = this.host;
    try {
      const mine = this.host.runningIds();
      // The queued jobs whose secrets this process holds are leased too: if it dies, they fail.
      const held = await leases.renew(workerId, [...new Set([...mine, ...secrets.keys()])], leaseMs);
      // Still queued: claimed while queued, waiting in the engine's queue (claimQueued).
      for (const id of mine) if (held.get(id) !== "running" && held.get(id) !== "queued") this.host.abortRun(id);
      await this.failExpired();
      const front: string[] = [];
      for (const id of queue.entries()) if (front.push(id) >= PRUNE_BATCH) break;
      for (const id of await leases.notQueued(front)) {
        queue.remove(id);
        secrets.delete(id);
      }
      this.beatFailed = false;
    } catch {
      this.beatFailed = true; // readiness reports it; the next beat tries again
    } finally {
      this.beating = false;
    }
    this.host.pump();
  }

  /** Ends the jobs whose lease passed (`worker_lost`; `canceled` if a cancel was under way). */
  private async failExpired(): Promise<void> {
    for (const job of await this.lease.leases.failExpired(this.host.now())) {
      this.host.log?.(
        `job ${job.id}: ended ${job.status}${job.error ? ` ${String(job.error.code)}` : ""}: the lease of the process holding it passed without a renewal`,
      );
      this.host.abortRun(job.id);
      this.host.events.publish({ type: "status", job });
    }
  }

  /** An API node (`serve --no-dispatch`) looks only for the jobs whose secrets only it holds. */
  wantsWork(): boolean {
    return this.lease.dispatch || this.host.secrets.size > 0;
  }

  /**
   * Claims the next jobs of the shared queue, one per free slot in one claim, and runs them:
   * running from their claim, or, with an engine that has a queue of its own, claimed while queued
   * (one at a time) until the engine starts it. False when none is claimable.
   */
  async startNext(launch: (start: RunStart) => void): Promise<boolean> {
    const { leases, workerId, leaseMs, dispatch } = this.lease;
    if (this.claimUncertain) await this.readBack(launch);
    let claimed;
    try {
      const free = Math.max(1, this.host.freeSlots());
      claimed = this.engineQueues
        ? [await leases.claimQueued(workerId, leaseMs, this.host.slotsFor, [...this.host.secrets.keys()], !dispatch)].filter((c) => c !== null)
        : await leases.claimMany(workerId, leaseMs, this.host.now(), this.host.slotsFor, [...this.host.secrets.keys()], !dispatch, free);
    } catch (err) {
      // The answer may be what was lost, not the claim: it may have committed.
      this.claimUncertain = true;
      throw err;
    }
    for (const { job, epoch } of claimed) {
      this.host.queue.remove(job.id);
      this.launchClaimed(launch, job, false, { workerId, epoch });
    }
    return claimed.length > 0;
  }

  /** Runs a claimed job: one still queued (claimQueued) waits in the engine until it reports the run started. */
  private launchClaimed(launch: (start: RunStart) => void, job: JobRecord, aborted: boolean, fence: RunFence): void {
    if (job.status !== "queued") {
      this.host.events.publish({ type: "status", job });
      return launch({ job, aborted, fence });
    }
    this.waitingInEngine.add(job.id);
    launch({ job, aborted, fence, hooks: { onQueued: () => undefined, onRunning: () => void this.waitingInEngine.delete(job.id) } });
  }

  /**
   * After a claim that failed without an answer: the live jobs carrying this worker's id that it
   * does not run are claims that committed after all; it runs them (a canceling one ends canceled).
   */
  private async readBack(launch: (start: RunStart) => void): Promise<void> {
    const { workerId } = this.lease;
    for (const { job, epoch } of await this.lease.leases.heldBy(workerId)) {
      if (this.host.runs(job.id)) continue;
      this.host.log?.(`job ${job.id}: claimed by this worker in a claim whose answer was lost; running it now`);
      this.host.queue.remove(job.id);
      this.launchClaimed(launch, job, job.status === "canceling", { workerId, epoch });
    }
    this.claimUncertain = false;
  }

  /** A job claimed while queued has its run waiting in the engine's queue here: it must be stopped. */
  dequeued(jobId: string): boolean {
    return this.waitingInEngine.has(jobId);
  }

  /** A claim commits the move to `running` with the claim: there is no window to abort in. */
  abortStarting(): boolean {
    return false;
  }

  runEnded(jobId: string): void {
    this.waitingInEngine.delete(jobId);
  }

  changed(): void {
    this.counts.changed();
  }

  /** Counted in the database across every process. */
  async position(jobId: string, read?: JobRecord): Promise<number | null> {
    // A row read as queued just before a worker claimed it was at the front.
    return (await this.lease.leases.position(jobId, read)) ?? 0;
  }

  /**
   * From the deployment's counts (read again after any change heard, see `changed`, and at least
   * every 200 ms) plus this process's submissions since: an exact count per submission would read
   * the whole queue each time. A GET (`position`) counts exactly.
   */
  positionOfNew(job: JobRecord): Promise<number | null> {
    return this.counts.positionOfNew(job.owner);
  }

  liveCount(owner: string): Promise<number> {
    return this.lease.leases.liveCount(owner);
  }

  queueDepth(): Promise<number> {
    return this.host.store.countQueued();
  }

  stop(): void {
    clearInterval(this.heartbeat);
  }

  /** Gives the leases up so that the jobs end (worker_lost, partner_key_lost) now, not a lease later. */
  async release(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.lease.leases
      .renew(this.lease.workerId, ids, -1)
      .then(() => this.failExpired())
      .catch(() => undefined);
  }
}
