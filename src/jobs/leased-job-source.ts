// The job source of a process sharing its database with others (PostgreSQL): a thin adapter over
// the store's JobLeases port. Jobs are claimed from the database, the next queued job of any
// node, under a lease this process renews on a heartbeat; the in-memory queue then only answers
// for the jobs this node knows, and positions and counts are read across every process.
import type { ClaimedJob, ClaimRider, JobRecord, JsonObject, RiddenClaim, RidingClaim, RunFence } from "../store/index.ts";
import type { LeaseOptions } from "./job-leases.ts";
import type { JobSource, RunStart, SourceHost } from "./job-source.ts";
import { SharedQueueCounts } from "./queue-counts.ts";

/** Local queue entries checked against the database per heartbeat (the front, where jobs leave). */
const PRUNE_BATCH = 1000;
/** Jobs of dead workers one heartbeat takes over at most (the rest at the next ones, or by other workers). */
const ADOPT_BATCH = 100;
/**
 * How many leases past its own a resumable job (claimed by a worker in front of ComfyUI) waits for
 * an adopter before any process fails it `worker_lost`: a live adopter's heartbeat (a third of its
 * lease) finds it well within that.
 */
export const ADOPT_GRACE_LEASES = 2;

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
  /** Whether a run goes on in the engine when this process dies (ComfyUI's prompts): its claims are resumable. */
  private readonly engineResumes: boolean;
  /** Whether this process takes over resumable jobs whose worker's lease passed: a dispatching one whose engine resumes runs. */
  private readonly adopts: boolean;
  /** Whether the next jobs ride the runs' ends (see `ridesEnds`). */
  private rides = false;

  constructor(host: SourceHost, lease: LeaseOptions, engineQueues = false, engineResumes = false) {
    this.host = host;
    this.lease = lease;
    this.engineQueues = engineQueues;
    this.engineResumes = engineResumes;
    this.adopts = engineResumes && lease.dispatch;
    this.counts = new SharedQueueCounts(() => lease.leases.queueCounts());
  }

  get failing(): boolean {
    return this.beatFailed;
  }

  /**
   * Nothing is recovered wholesale (other processes may be running the jobs); a job whose worker
   * died ends when its lease passes, found by the heartbeat of any process, or, claimed in front of
   * ComfyUI, is taken over by a worker in front of it (adoptExpired).
   */
  async start(): Promise<void> {
    const canRide = this.lease.dispatch && this.host.slotsFor === undefined && !this.engineQueues;
    this.rides = canRide && this.host.store.carryClaims(this.rider());
    // Often enough to renew a lease three times before it passes, and to pick up new jobs soon.
    const every = Math.max(50, Math.min(1000, Math.floor(this.lease.leaseMs / 3)));
    this.heartbeat = setInterval(() => void this.beat(), every);
    this.heartbeat.unref();
    await this.beat();
  }

  /**
   * One heartbeat: renews this worker's leases and aborts the runs it no longer holds or that a
   * cancel on any node moved to `canceling` (a run another worker took over is detached, its
   * prompt left to it); takes over resumable jobs whose lease passed; fails the jobs whose lease
   * passed; drops from the local queue the jobs gone from the database's; then looks for work
   * (other nodes' submissions).
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
      const lost = mine.filter((id) => !held.has(id));
      for (const id of mine) if (held.get(id) === "canceling") this.host.abortRun(id);
      // A prompt of a job another worker adopted goes on there: it is left alone, not stopped.
      const adopted = new Set(this.engineResumes && lost.length > 0 ? await leases.heldByOthers(workerId, lost) : []);
      for (const id of lost) {
        if (adopted.has(id)) {
          this.host.log?.(`job ${id}: another worker took it over after this worker's lease passed; this one stops following it`);
          this.host.detachRun(id);
        } else this.host.abortRun(id);
      }
      if (this.adopts) await this.adoptExpired();
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

  /**
   * Takes over the jobs of dead workers in front of ComfyUI (resumable) and runs them here, free
   * slot or not: a started one (running, canceling) is followed or collected where ComfyUI holds
   * its prompt, never submitted again, and fails `worker_lost` only when ComfyUI holds nothing of it
   * (a canceling one ends canceled); one that never started (queued) is followed if ComfyUI holds
   * it and submitted if not, as a restarted single process does (a secret one without its secret,
   * which died with its holder, is only followed).
   */
  private async adoptExpired(): Promise<void> {
    const { leases, workerId, leaseMs } = this.lease;
    for (const { job, epoch, secretsGiven } of await leases.adoptExpired(workerId, leaseMs, ADOPT_BATCH)) {
      const fence = { workerId, epoch };
      let start: RunStart;
      if (job.status === "queued") {
        this.host.queue.remove(job.id);
        const followOnly = secretsGiven && !this.host.secrets.has(job.id);
        start = { ...this.waitingStart(job, false, fence), ...(followOnly ? { resume: true } : {}) };
      } else start = { job, fence, resume: true, aborted: job.status === "canceling" };
      // Stopping: the job stays under this worker's lease, unrenewed, and another worker takes it once it passes.
      if (!this.host.adopt(start)) {
        this.waitingInEngine.delete(job.id);
        continue;
      }
      this.host.log?.(`job ${job.id}: the lease of the worker holding it (${job.status}) passed; this worker took it over and follows it in the engine`);
    }
  }

  /**
   * Ends the jobs whose lease passed (`worker_lost`; `canceled` if a cancel was under way); those a
   * worker in front of ComfyUI held are left to the adopters for ADOPT_GRACE_LEASES leases more.
   */
  private async failExpired(): Promise<void> {
    for (const job of await this.lease.leases.failExpired(this.host.now(), ADOPT_GRACE_LEASES * this.lease.leaseMs)) {
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
    if (this.claimUncertain) {
      await this.readBack();
      // What was read back may fill the slots, and more (a lost claim may have taken jobs ahead of them).
      if (this.host.freeSlots() <= 0) return true;
    }
    let claimed;
    const free = Math.max(1, this.host.freeSlots());
    try {
      claimed = this.engineQueues
        ? [await leases.claimQueued(workerId, leaseMs, this.host.slotsFor, [...this.host.secrets.keys()], !dispatch, this.engineResumes)].filter(
            (c) => c !== null,
          )
        : await leases.claimMany(workerId, leaseMs, this.host.now(), this.host.slotsFor, [...this.host.secrets.keys()], !dispatch, free);
    } catch (err) {
      // The answer may be what was lost, not the claim: it may have committed.
      this.claimUncertain = true;
      throw err;
    }
    this.startClaimed(launch, claimed, this.engineQueues ? 1 : free);
    return claimed.length > 0;
  }

  /** The claim this worker's runs' ends carry (Store.carryClaims), for the slots they free. */
  private rider(): ClaimRider {
    return {
      ask: (jobIds: readonly string[]): RidingClaim | null => {
        const limit = this.host.rideEnds(jobIds);
        if (limit === 0) return null;
        // A claim whose answer was lost is read back first, by a fill, before any other claim.
        if (this.claimUncertain) {
          this.host.rideAnswered(limit);
          this.host.pump();
          return null;
        }
        const { workerId, leaseMs } = this.lease;
        return { workerId, leaseMs, startedAt: this.host.now(), heldSecrets: [...this.host.secrets.keys()], limit };
      },
      answered: (claim: RidingClaim, outcome: RiddenClaim | { error: unknown }): void => {
        this.host.rideAnswered(claim.limit);
        if ("error" in outcome) {
          // The statement may have committed without an answer: the next fill reads back what this worker holds.
          this.claimUncertain = true;
          return this.host.pump();
        }
        const filled = this.startClaimed((start) => this.host.run(start), outcome.claimed, claim.limit);
        // Candidates left that other claims held: a fill's claim waits for them.
        if (!filled && outcome.candidates > outcome.claimed.length) this.host.pump();
      },
    };
  }

  /**
   * The next jobs ride the runs' ends (one statement for both, Store.carryClaims): in a worker that
   * dispatches, on a store that can, without tier limits (their claims take a lock and read the
   * counts first), with an engine that starts what it is given (not ComfyUI's queue).
   */
  get ridesEnds(): boolean {
    return this.rides;
  }

  /**
   * Runs the jobs a claim for up to `asked` took (but one a read-back already runs here), and
   * tells whether they filled what it asked for: a worker whose slots a claim filled need not
   * hear of new jobs until one frees.
   */
  private startClaimed(launch: (start: RunStart) => void, claimed: readonly ClaimedJob[], asked: number): boolean {
    const { workerId } = this.lease;
    for (const { job, epoch, workflow } of claimed) {
      this.host.queue.remove(job.id);
      if (!this.host.runs(job.id)) this.launchClaimed(launch, job, false, { workerId, epoch }, workflow);
    }
    const filled = claimed.length >= asked;
    this.lease.wantWakes?.(!filled);
    return filled;
  }

  /** Runs a claimed job: one still queued (claimQueued) waits in the engine until it reports the run started. */
  private launchClaimed(launch: (start: RunStart) => void, job: JobRecord, aborted: boolean, fence: RunFence, workflow?: JsonObject): void {
    const read = workflow === undefined ? {} : { workflow };
    if (job.status !== "queued") {
      this.host.events.publish({ type: "status", job });
      return launch({ job, aborted, fence, ...read });
    }
    launch({ ...this.waitingStart(job, aborted, fence), ...read });
  }

  /** The start of a run of a job claimed while queued: it waits in the engine's queue until the engine starts it. */
  private waitingStart(job: JobRecord, aborted: boolean, fence: RunFence): RunStart {
    this.waitingInEngine.add(job.id);
    const hooks = {
      onQueued: () => undefined,
      onRunning: () => void this.waitingInEngine.delete(job.id),
      holdsRun: () => this.holds(job.id),
      takenOver: async () => (await this.lease.leases.heldByOthers(this.lease.workerId, [job.id])).length > 0,
    };
    return { job, aborted, fence, hooks };
  }

  /**
   * Renews this worker's lease on a job now, right before its prompt goes to ComfyUI and right
   * after: false when another worker took it over (this one was stopped past its lease since its
   * claim, or between that renewal and its POST) or it ended.
   */
  private async holds(jobId: string): Promise<boolean> {
    const { leases, workerId, leaseMs } = this.lease;
    if ((await leases.renew(workerId, [jobId], leaseMs)).has(jobId)) return true;
    this.host.log?.(`job ${jobId}: this worker no longer holds it (another worker took it over, or it ended); it hands ComfyUI nothing more`);
    return false;
  }

  /**
   * After a claim that failed without an answer: the live jobs carrying this worker's id that it
   * does not run are claims that committed after all; it runs them (a canceling one ends canceled),
   * their graphs waiting for free slots: a claim riding ends may have taken jobs ahead of them.
   */
  private async readBack(): Promise<void> {
    const { workerId } = this.lease;
    for (const { job, epoch } of await this.lease.leases.heldBy(workerId)) {
      if (this.host.runs(job.id)) continue;
      this.host.log?.(`job ${job.id}: claimed by this worker in a claim whose answer was lost; running it now`);
      this.host.queue.remove(job.id);
      this.launchClaimed((start) => this.host.run(start), job, job.status === "canceling", { workerId, epoch });
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
    if (this.rides) this.host.store.carryClaims(null);
    this.rides = false;
  }

  /**
   * Gives the leases up so that the jobs end (worker_lost, partner_key_lost) now, not a lease later;
   * a job in front of ComfyUI is taken over by another worker instead (the stop handed its run over:
   * its prompt is followed there, or submitted if it never got there).
   */
  async release(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.lease.leases
      .release(this.lease.workerId, ids)
      .then(() => this.failExpired())
      .catch(() => undefined);
  }
}
