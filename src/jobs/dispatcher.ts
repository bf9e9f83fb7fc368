// Starts queued jobs when a slot is free, sharing the slots fairly between the owners with jobs
// waiting, and keeps the in-memory queue that answers queue positions. The store is the truth;
// the queue is rebuilt from it at start. With an engine that has a queue of its own (ComfyUI), a
// started run's job stays `queued` until the engine reports its graph running, and its position is
// what the engine reports ahead of it.
//
// With leases (PostgreSQL, several processes), jobs are claimed from the database instead: the
// next queued job of any node, under a lease this process renews on a heartbeat; the in-memory
// queue then only answers positions of the jobs this node knows (see LeaseOptions). With an engine
// that has a queue of its own, a claimed job stays `queued` under the lease until it starts there.
import { LeaseLostError, TerminalStatusError, type JobRecord, type RunFence } from "../store/index.ts";
import { DrainRate } from "./drain-rate.ts";
import type { EventBus } from "./event-bus.ts";
import { FairQueue } from "./fair-queue.ts";
import { PARTNER_KEY_LOST, WORKER_LOST } from "../domain/failures.ts";
import type { LeaseOptions } from "./job-leases.ts";
import { runJob, type JobRunDeps, type QueuedRunHooks } from "./job-run.ts";
import { SharedQueueCounts } from "./queue-counts.ts";

export interface DispatcherOptions extends JobRunDeps {
  /** Jobs that run at once. */
  concurrency: number;
  /** Jobs of one owner that may run at once (cloud tiers); unlimited when absent. */
  slotsFor?: (owner: string) => Promise<number>;
  /** Whether jobs may start now (false while the data directory is short of space); always when absent. */
  mayStart?: () => boolean;
  /** Claim jobs from the shared database under leases (PostgreSQL); absent: this process owns the queue. */
  lease?: LeaseOptions;
}

/** Local queue entries checked against the database per heartbeat (the front, where jobs leave). */
const PRUNE_BATCH = 1000;

/** Backoff of retried store writes: the first wait, doubling up to the last. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;

/** The queue, the slots, and the runs in flight. */
export class Dispatcher {
  /** Waiting jobs in start order, and each owner's running count. */
  readonly queue = new FairQueue();
  readonly drain = new DrainRate();
  private readonly o: DispatcherOptions;
  private readonly running = new Map<string, AbortController>();
  /**
   * Jobs whose move to `running` is being committed, not launched yet, and whether a cancel
   * asked to stop them meanwhile: a read shows the job running once the move commits, before
   * it is durable and launched, and a cancel in that window must still stop the run.
   */
  private readonly starting = new Map<string, boolean>();
  /** Runs handed to an engine with its own queue and not started there yet: work ahead of each. */
  private readonly waitingInEngine = new Map<string, number>();
  /** Secrets of queued and running jobs, in memory only, dropped when the run ends. */
  private readonly extras = new Map<string, { api_key_vendor_org?: string }>();
  private readonly inflight = new Set<Promise<unknown>>();
  /** The queue was read from the store (`load`). */
  private loaded = false;
  /** Jobs start only after `start` (recovery) ran. */
  private started = false;
  private pumping = false;
  private pumpAgain = false;
  private stopped = false;
  /** Ends the grace period of a stop under way. */
  private endGrace: (() => void) | undefined;
  /** Set when a stop's grace is over: every run, even one a fill launches later, is aborted. */
  private abortingRuns = false;
  /** Store writes failing now and being retried: "start" (a fill), or the id of a run's end. */
  private readonly failingWrites = new Set<string>();
  /** Backoff of the next fill after a failed one, and its timer. */
  private fillRetryMs = RETRY_FIRST_MS;
  private fillRetry: NodeJS.Timeout | undefined;
  /** Wakes the retries that wait, so that a stop does not wait for their backoff. */
  private readonly wakers = new Set<() => void>();
  /** A claim failed without an answer: it may have committed; the next fill reads back what this worker holds. */
  private claimUncertain = false;
  /** The heartbeat of leased dispatch, and whether one is under way. */
  private heartbeat: NodeJS.Timeout | undefined;
  private beating = false;

  /** The deployment's queue counts, for the positions of new jobs (leases only). */
  private readonly sharedCounts: SharedQueueCounts | null;

  constructor(options: DispatcherOptions) {
    this.o = options;
    const leases = options.lease?.leases;
    this.sharedCounts = leases ? new SharedQueueCounts(() => leases.queueCounts()) : null;
  }

  private get events(): EventBus {
    return this.o.events;
  }

  /**
   * Loads the queued jobs into the in-memory queue, in their order. Read-only: a server loads
   * before it listens, and touches jobs only once it listens (`start`).
   */
  async load(): Promise<void> {
    if (this.loaded) return;
    this.loaded = true;
    let after = 0;
    for (;;) {
      const page = await this.o.store.queuedJobs(5000, after);
      for (const job of page) this.queue.push(job.id, job.owner);
      if (page.length < 5000) break;
      after = page[page.length - 1]!.seq;
    }
  }

  /**
   * Recovers after a restart and starts dispatching: jobs left running or canceling by a dead
   * process end `failed` with `worker_lost` (never `running` forever), except with an engine whose
   * runs go on without us (ComfyUI's prompts): a running job is followed to its real end, a
   * canceling one is stopped there and ends canceled; queued jobs run in order,
   * except those submitted with secrets (a partner key), which lived in the dead process's memory
   * only: they end `failed` with `partner_key_lost` rather than run without them.
   */
  async start(): Promise<void> {
    await this.load();
    if (this.o.lease) return this.startLeased(this.o.lease);
    const now = this.o.now();
    const resumed: JobRecord[] = [];
    for (const job of await this.o.store.jobsInStatus(["running", "canceling"])) {
      if (this.o.engine.resumesRuns) {
        resumed.push(job);
        continue;
      }
      const to = job.status === "canceling" ? "canceled" : "failed";
      const patch =
        to === "failed"
          ? { completed_at: now, error: { ...WORKER_LOST } }
          : { completed_at: now };
      await this.o.store.transitionJob(job.id, [job.status], to, patch).catch(ignoreTerminal);
    }
    for (const id of await this.o.store.queuedJobsWithSecrets()) {
      // A job submitted to this process since it started listening still has its key here.
      if (this.extras.has(id)) continue;
      const error = { ...PARTNER_KEY_LOST };
      // Through `running`, as every failure (the state machine has no queued -> failed).
      const started = await this.o.store.transitionJob(id, ["queued"], "running", { started_at: now }).catch(ignoreTerminal);
      this.queue.remove(id);
      if (!started) continue;
      const job = await this.o.store.transitionJob(id, ["running"], "failed", { completed_at: now, error }).catch(ignoreTerminal);
      if (job) this.events.publish({ type: "status", job });
    }
    this.started = true;
    for (const job of resumed) this.launch(job, undefined, job.status === "canceling", undefined, true);
    this.pump();
  }

  /**
   * Leased start: nothing is recovered wholesale (other processes may be running the jobs); a job
   * whose worker died ends when its lease passes, found by the heartbeat of any process.
   */
  private async startLeased(lease: LeaseOptions): Promise<void> {
    this.started = true;
    // Often enough to renew a lease three times before it passes, and to pick up new jobs soon.
    const every = Math.max(50, Math.min(1000, Math.floor(lease.leaseMs / 3)));
    this.heartbeat = setInterval(() => void this.beat(lease), every);
    this.heartbeat.unref();
    await this.beat(lease);
  }

  /**
   * One heartbeat: renews this worker's leases and aborts the runs it no longer holds or that a
   * cancel on any node moved to `canceling`; fails the jobs whose lease passed; drops from the
   * local queue the jobs gone from the database's; then looks for work (other nodes' submissions).
   */
  private async beat(lease: LeaseOptions): Promise<void> {
    if (this.beating) return;
    this.beating = true;
    try {
      const mine = [...this.running.keys()];
      // The queued jobs whose secrets this process holds are leased too: if it dies, they fail.
      const held = await lease.leases.renew(lease.workerId, [...new Set([...mine, ...this.extras.keys()])], lease.leaseMs);
      // Still queued: claimed while queued, waiting in the engine's queue (claimQueued).
      for (const id of mine) if (held.get(id) !== "running" && held.get(id) !== "queued") this.running.get(id)?.abort();
      await this.failExpired(lease);
      const front: string[] = [];
      for (const id of this.queue.entries()) if (front.push(id) >= PRUNE_BATCH) break;
      for (const id of await lease.leases.notQueued(front)) {
        this.queue.remove(id);
        this.extras.delete(id);
      }
      this.failingWrites.delete("lease");
    } catch {
      this.failingWrites.add("lease"); // readiness reports it; the next beat tries again
    } finally {
      this.beating = false;
    }
    this.pump();
  }

  /** Ends the jobs whose lease passed (`worker_lost`; `canceled` if a cancel was under way). */
  private async failExpired(lease: LeaseOptions): Promise<void> {
    for (const job of await lease.leases.failExpired(this.o.now())) {
      this.o.log?.(`job ${job.id}: ended ${job.status}${job.error ? ` ${String(job.error.code)}` : ""}: the lease of the process holding it passed without a renewal`);
      this.running.get(job.id)?.abort();
      this.events.publish({ type: "status", job });
    }
  }

  /** A job just committed as queued. */
  enqueue(job: JobRecord, extra: { api_key_vendor_org?: string } | undefined): void {
    if (extra && Object.keys(extra).length > 0) this.extras.set(job.id, extra);
    this.queue.push(job.id, job.owner);
    this.pump();
  }

  /** Takes a queued job out of the queue (cancel, expiry); one already handed to the engine is stopped there. */
  dequeue(jobId: string): void {
    this.queue.remove(jobId);
    this.extras.delete(jobId);
    if (this.waitingInEngine.has(jobId)) this.running.get(jobId)?.abort();
  }

  /**
   * How many jobs, or other work of the engine, are ahead of a queued job (0: next to start);
   * null when it is not queued. Jobs waiting in flowgate's queue come after everything waiting
   * in the engine's queue. With leases, counted in the database across every process.
   */
  async position(jobId: string): Promise<number | null> {
    if (this.o.lease) {
      // A row read as queued just before a worker claimed it was at the front.
      return (await this.o.lease.leases.position(jobId)) ?? 0;
    }
    const inEngine = this.waitingInEngine.get(jobId);
    if (inEngine !== undefined) return inEngine;
    // Asked about a row read as queued just before its start committed (an asynchronous store):
    // it was at the front.
    if (this.running.has(jobId)) return 0;
    const mine = this.queue.position(jobId);
    if (mine === null) return null;
    let engineAhead = 0;
    for (const ahead of this.waitingInEngine.values()) engineAhead = Math.max(engineAhead, ahead + 1);
    return mine + engineAhead;
  }

  /**
   * The position of a job this process has just queued. With leases, from the deployment's counts
   * (read again after any change heard, see `queueChanged`, and at least every 200 ms) plus this
   * process's submissions since: an exact count per submission would read the whole queue each
   * time. A GET (`position`) counts exactly.
   */
  async positionOfNew(job: JobRecord): Promise<number | null> {
    if (!this.sharedCounts) return this.position(job.id);
    return this.sharedCounts.positionOfNew(job.owner);
  }

  /**
   * The queue moved: a job started, ended or left, here or in another process (`jobId` and
   * `status` given when heard from another), or another process queued jobs. A job of this
   * node's queue that another process took or ended leaves it at once, not at the next heartbeat.
   */
  queueChanged(jobId?: string, status?: string): void {
    this.sharedCounts?.changed();
    if (jobId === undefined || status === "queued" || !this.queue.remove(jobId)) return;
    if (!this.running.has(jobId)) this.extras.delete(jobId);
  }

  /** Whether the queue is shared by several processes (PostgreSQL leases): this node's queue is then only what it knows of it. */
  get sharesQueue(): boolean {
    return this.o.lease !== undefined;
  }

  /** An owner's jobs waiting or running (canceling ones included until their run ends); with leases, across every process. */
  async liveCount(owner: string): Promise<number> {
    if (this.o.lease) return this.o.lease.leases.liveCount(owner);
    return this.queue.waiting(owner) + this.queue.running(owner);
  }

  /** Jobs waiting; with leases, in the database across every process. */
  async queueDepth(): Promise<number> {
    return this.o.lease ? this.o.store.countQueued() : this.queue.size;
  }

  /** Asks a running job to stop at its next node or step boundary. */
  abort(jobId: string): boolean {
    const controller = this.running.get(jobId);
    if (controller === undefined && this.starting.has(jobId)) {
      this.starting.set(jobId, true); // its launch aborts it
      return true;
    }
    controller?.abort();
    return controller !== undefined;
  }

  /** Whether this process runs the job now. */
  runs(jobId: string): boolean {
    return this.running.has(jobId);
  }

  /** Jobs running now. */
  get runningCount(): number {
    return this.running.size;
  }

  /** Whether a store write of the dispatcher is failing (and being retried): readiness reports it. */
  get failing(): boolean {
    return this.failingWrites.size > 0;
  }

  /** Whether the dispatcher has stopped starting jobs (a stop or a drain is under way or done). */
  get stopping(): boolean {
    return this.stopped;
  }

  /**
   * Stops starting jobs, lets the runs in flight finish for up to `graceMs`, then aborts what
   * still runs and waits for it to settle. Queued jobs stay queued: they run after a restart.
   * A second call ends a wait under way at once.
   */
  async stop(graceMs = 0): Promise<void> {
    const again = this.stopped;
    this.stopped = true;
    if (again) this.endGrace?.();
    else if (graceMs > 0 && this.inflight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const ended = new Promise<void>((resolve) => {
        this.endGrace = resolve;
        timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([ended, this.settled()]);
      clearTimeout(timer);
      this.endGrace = undefined;
    }
    this.abortingRuns = true;
    clearTimeout(this.fillRetry);
    // Runs stopped before their end, and queued jobs whose secrets die with this process.
    const unfinished = [...new Set([...this.running.keys(), ...(this.o.lease ? this.extras.keys() : [])])];
    for (const c of this.running.values()) c.abort();
    for (const wake of [...this.wakers]) wake();
    await this.settled();
    clearInterval(this.heartbeat);
    const lease = this.o.lease;
    if (lease && !again && unfinished.length > 0) {
      // Give their leases up so they end (worker_lost, partner_key_lost) now, not a lease later.
      await lease.leases
        .renew(lease.workerId, unfinished, -1)
        .then(() => this.failExpired(lease))
        .catch(() => undefined);
    }
  }

  /** Resolves once no fill and no run is in flight (a fill under way may still launch one run). */
  private async settled(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /** Fills free slots from the queue; a call during a fill makes it run once more after. */
  pump(): void {
    if (this.stopped || !this.started) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    // Every slot is taken (the usual case while a queue waits): the end of a run pumps again.
    if (this.running.size >= this.o.concurrency) return;
    // An API node: workers run the jobs, but for those whose secrets only this node holds.
    if (this.o.lease && !this.o.lease.dispatch && this.extras.size === 0) return;
    this.pumping = true;
    const p = this.fill()
      .then(() => {
        // A fill that ended without a store failure: starts work (or there was nothing to start).
        this.failingWrites.delete("start");
        this.fillRetryMs = RETRY_FIRST_MS;
      })
      .catch(() => this.fillFailed())
      .finally(() => {
        this.pumping = false;
        this.inflight.delete(p);
        if (this.pumpAgain) {
          this.pumpAgain = false;
          this.pump();
        }
      });
    this.inflight.add(p);
  }

  /**
   * A fill failed (the store refused a start): the job keeps its place in the queue, readiness
   * reports the failure, and the fill is tried again after a backoff (100 ms doubling to 5 s).
   */
  private fillFailed(): void {
    this.failingWrites.add("start");
    if (this.stopped || this.fillRetry !== undefined) return;
    this.fillRetry = setTimeout(() => {
      this.fillRetry = undefined;
      this.pump();
    }, this.fillRetryMs);
    this.fillRetryMs = Math.min(this.fillRetryMs * 2, RETRY_MAX_MS);
  }

  /**
   * Writes the end of a run, retrying until it lands: a job never stays `running` because one
   * write failed. A stop that aborts the runs gives up (the next start ends the job worker_lost).
   */
  private async persistEnd<T>(jobId: string, write: () => Promise<T>, giveUp?: (err: unknown) => boolean): Promise<T> {
    for (let delay = RETRY_FIRST_MS; ; delay = Math.min(delay * 2, RETRY_MAX_MS)) {
      try {
        const result = await write();
        this.failingWrites.delete(jobId);
        return result;
      } catch (err) {
        // Refused (the run lost its job) or not to be retried (a full disk): the run decides.
        if (err instanceof LeaseLostError || giveUp?.(err)) {
          this.failingWrites.delete(jobId);
          throw err;
        }
        this.failingWrites.add(jobId);
        if (this.abortingRuns) throw err;
        await this.pause(delay);
      }
    }
  }

  /** Waits `ms`, or less if a stop comes. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }

  private async fill(): Promise<void> {
    while (!this.stopped && this.running.size < this.o.concurrency && (this.o.mayStart?.() ?? true)) {
      if (this.o.lease) {
        if (!(await this.claim(this.o.lease))) return;
        continue;
      }
      const id = await this.nextStartable();
      if (id === undefined) return;
      if (this.o.engine.queuesWork) {
        await this.handToEngine(id);
        continue;
      }
      const now = this.o.now();
      // The job keeps its place (position 0) until it is durably running.
      this.starting.set(id, false);
      const job = await this.o.store.transitionJob(id, ["queued"], "running", { started_at: now }).catch((err: unknown) => {
        this.starting.delete(id);
        return ignoreTerminal(err);
      });
      const abortAsked = this.starting.get(id) === true;
      this.starting.delete(id);
      this.queue.remove(id);
      if (!job) {
        this.extras.delete(id); // canceled or expired meanwhile
        continue;
      }
      this.events.publish({ type: "status", job });
      this.launch(job, undefined, abortAsked);
    }
  }

  /**
   * Claims the next job of the shared queue and runs it: running from its claim, or, with an engine
   * that has a queue of its own, claimed while queued until the engine starts it. False when none is claimable.
   */
  private async claim(lease: LeaseOptions): Promise<boolean> {
    if (this.claimUncertain) await this.readBack(lease);
    let claimed;
    try {
      claimed = this.o.engine.queuesWork
        ? await lease.leases.claimQueued(lease.workerId, lease.leaseMs, this.o.slotsFor, [...this.extras.keys()], !lease.dispatch)
        : await lease.leases.claim(lease.workerId, lease.leaseMs, this.o.now(), this.o.slotsFor, [...this.extras.keys()], !lease.dispatch);
    } catch (err) {
      // The answer may be what was lost, not the claim: it may have committed.
      this.claimUncertain = true;
      throw err;
    }
    if (!claimed) return false;
    this.queue.remove(claimed.job.id);
    this.launchClaimed(claimed.job, false, { workerId: lease.workerId, epoch: claimed.epoch });
    return true;
  }

  /** Runs a claimed job: one still queued (claimQueued) waits in the engine until it reports the run started. */
  private launchClaimed(job: JobRecord, aborted: boolean, fence: RunFence): void {
    if (job.status !== "queued") {
      this.events.publish({ type: "status", job });
      return this.launch(job, undefined, aborted, fence);
    }
    this.waitingInEngine.set(job.id, 0);
    this.launch(job, this.engineHooks(job.id), aborted, fence);
  }

  /**
   * After a claim that failed without an answer: the live jobs carrying this worker's id that it
   * does not run are claims that committed after all; it runs them (a canceling one ends canceled).
   */
  private async readBack(lease: LeaseOptions): Promise<void> {
    for (const { job, epoch } of await lease.leases.heldBy(lease.workerId)) {
      if (this.running.has(job.id)) continue;
      this.o.log?.(`job ${job.id}: claimed by this worker in a claim whose answer was lost; running it now`);
      this.queue.remove(job.id);
      this.launchClaimed(job, job.status === "canceling", { workerId: lease.workerId, epoch });
    }
    this.claimUncertain = false;
  }

  /**
   * The next job in fair order whose owner has a free slot (cloud tiers): the first job of the
   * owner with the fewest jobs running, ties by submission order. However many jobs a busy owner
   * has waiting, another owner's job never waits behind them for more than one run.
   */
  private async nextStartable(): Promise<string | undefined> {
    for (const { id, owner } of this.queue.heads()) {
      if (!this.o.slotsFor || this.queue.running(owner) < (await this.o.slotsFor(owner))) return id;
    }
    return undefined;
  }

  /** Starts the run of a job that stays `queued` until the engine reports it running. */
  private async handToEngine(id: string): Promise<void> {
    const job = await this.o.store.getJob(id);
    // A cancel or an expiry that came during the read has taken it out of the queue already.
    if (!this.queue.remove(id)) return;
    if (!job || job.status !== "queued") {
      this.extras.delete(id);
      return;
    }
    this.waitingInEngine.set(id, 0);
    this.launch(job, this.engineHooks(id));
  }

  /** What a run waiting in the engine's queue reports: the work ahead of it there, then its start. */
  private engineHooks(id: string): QueuedRunHooks {
    return {
      onQueued: (ahead) => {
        if (this.waitingInEngine.has(id)) this.waitingInEngine.set(id, ahead);
      },
      onRunning: () => this.waitingInEngine.delete(id),
    };
  }

  /**
   * Runs a job; `aborted`: a cancel came while its start was being committed; `fence`: the claim it
   * runs under (leases); `resume`: a run an earlier process started, followed in the engine.
   */
  private launch(job: JobRecord, hooks?: QueuedRunHooks, aborted = false, fence: RunFence = { workerId: null, epoch: 0 }, resume = false): void {
    const controller = new AbortController();
    // A fill that was committing this start when the stop came launches it late: stop it too.
    if (this.abortingRuns || aborted) controller.abort();
    this.running.set(job.id, controller);
    this.queue.started(job.owner);
    const extra = this.extras.get(job.id) ?? {};
    const deps = { ...this.o, persistEnd: <T>(write: () => Promise<T>, giveUp?: (err: unknown) => boolean) => this.persistEnd(job.id, write, giveUp) };
    const p = runJob(deps, job, extra, controller.signal, hooks, fence, resume)
      .catch(() => null)
      .finally(() => {
        this.failingWrites.delete(job.id);
        this.running.delete(job.id);
        this.waitingInEngine.delete(job.id);
        this.extras.delete(job.id);
        this.queue.ended(job.owner);
        this.inflight.delete(p);
        this.drain.record(this.o.now());
        this.pump();
      });
    this.inflight.add(p);
  }
}

function ignoreTerminal(err: unknown): null {
  if (err instanceof TerminalStatusError) return null;
  throw err;
}
