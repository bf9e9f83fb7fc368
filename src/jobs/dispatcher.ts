// Starts queued jobs when a slot is free and stops the runs: the slots, the launch of each run,
// the retries of a run's end, and a stop that drains. Which job starts next comes from a job
// source (src/jobs/job-source.ts): this process's own queue, rebuilt from the store at start
// (LocalJobSource), or, with leases (PostgreSQL, several processes), the shared database
// (LeasedJobSource). The in-memory queue answers positions of the jobs this node knows.
import { LeaseLostError, type JobRecord } from "../store/index.ts";
import { ClaimAhead } from "./claim-ahead.ts";
import { DrainRate } from "./drain-rate.ts";
import { EngineSlots } from "./engine-slots.ts";
import { FairQueue } from "./fair-queue.ts";
import type { LeaseOptions } from "./job-leases.ts";
import { runJob, type JobRunDeps } from "./job-run.ts";
import type { JobQueue } from "./job-queue.ts";
import type { JobFeed, JobSecrets, JobSource, QueueCounts, QueueNotices, RunStart, SourceHost, SourceLifecycle } from "./job-source.ts";
import { LeasedJobSource } from "./leased-job-source.ts";
import { LocalJobSource } from "./local-job-source.ts";

export interface DispatcherOptions extends JobRunDeps {
  /** Jobs that run at once. */
  concurrency: number;
  /** Jobs of one owner that may run at once (cloud tiers); unlimited when absent. */
  slotsFor?: (owner: string) => Promise<number>;
  /** Whether jobs may start now (false while the data directory is short of space); always when absent. */
  mayStart?: () => boolean;
  /** Claim jobs from the shared database under leases (PostgreSQL); absent: this process owns the queue. */
  lease?: LeaseOptions;
  /** The longest graph (ms, by `now`) that still counts as a short run for claims ahead; default SHORT_RUN_MS. */
  shortRunMs?: number;
}

/** Backoff of retried store writes: the first wait, doubling up to the last. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;

/**
 * Where the dispatcher is in its life, in order: `idle` until `start`, `dispatching` (fills free
 * slots), `draining` (a stop: no job starts, the runs in flight may finish within the grace),
 * `aborting` (the grace is over: every run, even one a fill launches later, is aborted).
 */
export type DispatcherMode = "idle" | "dispatching" | "draining" | "aborting";

/** A fill of the free slots: none under way, one under way, or one under way that must run once more. */
type FillState = "idle" | "filling" | "again";

/** The queue, the slots, and the runs in flight. */
export class Dispatcher implements JobQueue {
  /** Waiting jobs in start order, and each owner's running count. */
  private readonly queue = new FairQueue();
  private readonly drain = new DrainRate();
  private readonly o: DispatcherOptions;
  /** Where the jobs to start come from: one source, which each part of the dispatcher sees as it needs. */
  private readonly sourceLifecycle: SourceLifecycle;
  private readonly feed: JobFeed;
  private readonly notices: QueueNotices;
  private readonly counts: QueueCounts;
  private readonly running = new Map<string, AbortController>();
  /** The engine's slots: a run claimed ahead of a free one waits there (see ClaimAhead). */
  private readonly slots: EngineSlots;
  private readonly ahead: ClaimAhead;
  /** Runs the engine is still busy with (see slotsTaken). */
  private readonly engineBusy = new Set<string>();
  /** Runs whose engine is done and whose end is to carry the claim of their slot (JobFeed.ridesEnds). */
  private readonly riding = new Set<string>();
  /** Slots reserved for claims riding ends now in flight (SourceHost.rideEnds). */
  private ridingReserved = 0;
  /** Per run: stops following it, leaving it where the engine runs it (another process took the job over). */
  private readonly detachers = new Map<string, AbortController>();
  /** Secrets of queued and running jobs, in memory only, dropped when the run ends. */
  private readonly extras = new Map<string, JobSecrets>();
  /** Waiting jobs whose ids this process made (SourceHost.newIds); only without leases, where no other process starts them. */
  private readonly newIds = new Set<string>();
  private readonly inflight = new Set<Promise<unknown>>();
  /** Jobs a fill under way as the stop came launched after it: stopped at once, and given up with the others. */
  private readonly lateStarts = new Set<string>();
  /** The queue was read from the store (`load`): a fact of the queue, not a mode (a stop may come before). */
  private loaded = false;
  private mode: DispatcherMode = "idle";
  private filling: FillState = "idle";
  /** Ends the grace period of a stop under way. */
  private endGrace: (() => void) | undefined;
  /** Store writes failing now and being retried: "start" (a fill), or the id of a run's end. */
  private readonly failingWrites = new Set<string>();
  /** Backoff of the next fill after a failed one, and its timer. */
  private fillRetryMs = RETRY_FIRST_MS;
  private fillRetry: NodeJS.Timeout | undefined;
  /** Wakes the retries that wait, so that a stop does not wait for their backoff. */
  private readonly wakers = new Set<() => void>();

  constructor(options: DispatcherOptions) {
    this.o = options;
    this.slots = new EngineSlots(options.concurrency);
    this.ahead = new ClaimAhead(options.concurrency, options.shortRunMs);
    const host: SourceHost = {
      store: options.store,
      events: options.events,
      now: options.now,
      log: options.log,
      slotsFor: options.slotsFor,
      queue: this.queue,
      secrets: this.extras,
      newIds: this.newIds,
      runningIds: () => [...this.running.keys()],
      runs: (jobId: string) => this.running.has(jobId),
      freeSlots: () => this.o.concurrency - this.slotsTaken(),
      abortRun: (jobId: string) => this.running.get(jobId)?.abort(),
      detachRun: (jobId: string) => this.detachers.get(jobId)?.abort(),
      // From the source's first heartbeat on, which runs before `start` returns.
      adopt: (start: RunStart) => {
        if (this.stopped || this.running.has(start.job.id)) return false;
        this.launch(start);
        return true;
      },
      pump: () => this.pump(),
      rideEnds: (jobIds: readonly string[]) => this.rideEnds(jobIds),
      rideAnswered: (slots: number) => {
        this.ridingReserved -= slots;
      },
      run: (start: RunStart) => this.launch(start, true),
    };
    const source: JobSource = options.lease
      ? new LeasedJobSource(host, options.lease, options.engine.queuesWork, options.engine.resumesRuns)
      : new LocalJobSource(host, options.engine.queuesWork, options.engine.resumesRuns);
    this.sourceLifecycle = source;
    this.feed = source;
    this.notices = source;
    this.counts = source;
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
   * Starts dispatching once the source has begun: recovery after a restart (jobs a dead process
   * left running end `worker_lost`, queued jobs whose secrets it alone held `partner_key_lost`),
   * or, with leases, the heartbeat that renews this process's claims.
   */
  async start(): Promise<void> {
    await this.load();
    await this.sourceLifecycle.start();
    if (this.mode === "idle") this.mode = "dispatching";
    this.pump();
  }

  /** A job just committed as queued; `newId`: its id was made here as it was accepted. */
  enqueue(job: JobRecord, extra: JobSecrets | undefined, newId = false): void {
    if (extra && Object.keys(extra).length > 0) this.extras.set(job.id, extra);
    if (newId && !this.o.lease) this.newIds.add(job.id);
    this.queue.push(job.id, job.owner);
    this.pump();
  }

  /** Takes a queued job out of the queue (cancel, expiry); one already handed to the engine is stopped there. */
  dequeue(jobId: string): void {
    this.queue.remove(jobId);
    this.extras.delete(jobId);
    this.newIds.delete(jobId);
    if (this.notices.dequeued(jobId)) this.running.get(jobId)?.abort();
  }

  /**
   * How many jobs, or other work of the engine, are ahead of a queued job (0: next to start);
   * null when it is not queued. Jobs waiting in flowgate's queue come after everything waiting
   * in the engine's queue. With leases, counted in the database across every process.
   */
  position(jobId: string, read?: JobRecord): Promise<number | null> {
    return this.counts.position(jobId, read);
  }

  /**
   * The position of a job this process has just queued. With leases, from the deployment's counts
   * (read again after any change heard, see `queueChanged`, which a server hears only while a
   * stream or socket follows a job, and at least every 200 ms) plus this
   * process's submissions since: an exact count per submission would read the whole queue each
   * time. A GET (`position`) counts exactly.
   */
  positionOfNew(job: JobRecord): Promise<number | null> {
    return this.counts.positionOfNew(job);
  }

  /**
   * The queue moved: a job started, ended or left, here or in another process (`jobId` and
   * `status` given when heard from another), or another process queued jobs. A job of this
   * node's queue that another process took or ended leaves it at once, not at the next heartbeat.
   */
  queueChanged(jobId?: string, status?: string): void {
    this.notices.changed();
    if (jobId === undefined || status === "queued" || !this.queue.remove(jobId)) return;
    if (!this.running.has(jobId)) this.extras.delete(jobId);
  }

  /** Whether the queue is shared by several processes (PostgreSQL leases): this node's queue is then only what it knows of it. */
  get sharesQueue(): boolean {
    return this.counts.shared;
  }

  /** An owner's jobs waiting or running (canceling ones included until their run ends); with leases, across every process. */
  liveCount(owner: string): Promise<number> {
    return this.counts.liveCount(owner);
  }

  /** Jobs waiting; with leases, in the database across every process. */
  queueDepth(): Promise<number> {
    return this.counts.queueDepth();
  }

  /** Asks a running job to stop at its next node or step boundary. */
  abort(jobId: string): boolean {
    const controller = this.running.get(jobId);
    // A job whose start is being committed: its launch aborts it.
    if (controller === undefined && this.feed.abortStarting(jobId)) return true;
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

  /** Jobs waiting in this process's queue (with leases: those this node knows). */
  get waiting(): number {
    return this.queue.size;
  }

  /** The ids of the jobs waiting in this process's queue, in start order. */
  waitingIds(): string[] {
    return [...this.queue.entries()];
  }

  /** Seconds until `ahead` jobs have left the queue at the recent drain rate. */
  retryAfterSeconds(ahead: number): number {
    return this.drain.retryAfterSeconds(ahead, this.o.now());
  }

  /** A queued job left without running (a cancel): it counts toward the drain rate. */
  left(): void {
    this.drain.record(this.o.now());
  }

  /** Whether a store write of the dispatcher is failing (and being retried): readiness reports it. */
  get failing(): boolean {
    return this.failingWrites.size > 0 || this.feed.failing;
  }

  /** Whether the dispatcher has stopped starting jobs (a stop or a drain is under way or done). */
  get stopping(): boolean {
    return this.stopped;
  }

  /** A stop came: no job starts any more (`draining` or `aborting`). */
  private get stopped(): boolean {
    return this.mode === "draining" || this.mode === "aborting";
  }

  /**
   * Stops starting jobs, lets the runs in flight finish for up to `graceMs`, then aborts what
   * still runs (in front of ComfyUI: hands it over) and waits for it to settle.
   * Queued jobs stay queued: they run after a restart.
   * A second call ends a wait under way at once.
   */
  async stop(graceMs = 0): Promise<void> {
    const again = this.stopped;
    if (!again) this.mode = "draining";
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
    this.mode = "aborting";
    clearTimeout(this.fillRetry);
    // Runs stopped before their end, and queued jobs whose secrets die with this process: the
    // source gives them up (with leases, so that they end now rather than a lease later).
    const unfinished = [...new Set([...this.running.keys(), ...this.extras.keys()])];
    // A run whose work goes on in the engine when this process is gone (ComfyUI's prompt) is handed
    // over, not stopped: it is left where it runs, nothing of it written here, and whoever holds the
    // job next follows it (under leases another worker at once, else this process once restarted),
    // as after a crash. Stopping it could race the engine starting it (a prompt pending as the stop
    // comes): interrupted, or run twice by the next holder submitting the still queued job again.
    const handOver = this.o.engine.resumesRuns;
    for (const [id, c] of this.running) {
      const detacher = handOver ? this.detachers.get(id) : undefined;
      if (detacher) this.o.log?.(`job ${id}: this process stops; the run goes on in the engine, left to whoever holds the job next`);
      (detacher ?? c).abort();
    }
    for (const wake of [...this.wakers]) wake();
    await this.settled();
    this.sourceLifecycle.stop();
    if (!again) await this.sourceLifecycle.release([...new Set([...unfinished, ...this.lateStarts])]);
  }

  /** Resolves once no fill and no run is in flight (a fill under way may still launch one run). */
  private async settled(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /**
   * Slots taken now, by runs and by jobs claimed ahead of a free slot. With leases (PostgreSQL), a
   * run whose engine is done no longer holds one while its end commits, up to as many such runs as
   * the jobs this worker may hold: the next claim goes out meanwhile.
   */
  private slotsTaken(): number {
    if (!this.o.lease) return this.running.size;
    return Math.max(this.engineBusy.size + this.riding.size + this.ridingReserved, this.running.size - this.capacity());
  }

  /** The jobs this worker may hold: its slots, and the jobs claims riding its runs' ends take ahead of them while its runs are short. */
  private capacity(): number {
    return this.o.concurrency + (this.feed.ridesEnds ? this.ahead.jobs : 0);
  }

  /**
   * The ends of these runs are being written with a claim riding them: their slots are free, and
   * every free slot is reserved for that claim (none while a fill claims: it takes them, the ride
   * carries nothing). See SourceHost.rideEnds.
   */
  private rideEnds(jobIds: readonly string[]): number {
    let freed = 0;
    for (const id of jobIds) if (this.riding.delete(id)) freed++;
    if (freed === 0) return 0;
    if (this.mode !== "dispatching" || this.filling !== "idle" || !(this.o.mayStart?.() ?? true)) {
      this.pump();
      return 0;
    }
    const free = this.capacity() - this.slotsTaken();
    if (free <= 0) return 0;
    this.ridingReserved += free;
    return free;
  }

  /** Fills free slots from the queue; a call during a fill makes it run once more after. */
  pump(): void {
    if (this.mode !== "dispatching") return;
    if (this.filling !== "idle") {
      this.filling = "again";
      return;
    }
    // Every slot is taken (the usual case while a queue waits): the end of a run pumps again.
    if (this.slotsTaken() >= this.o.concurrency) return;
    // An API node: workers run the jobs, but for those whose secrets only this node holds.
    if (!this.feed.wantsWork()) return;
    this.filling = "filling";
    const p = this.fill()
      .then(() => {
        // A fill that ended without a store failure: starts work (or there was nothing to start).
        this.failingWrites.delete("start");
        this.fillRetryMs = RETRY_FIRST_MS;
      })
      .catch(() => this.fillFailed())
      .finally(() => {
        const again = this.filling === "again";
        this.filling = "idle";
        this.inflight.delete(p);
        if (again) this.pump();
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
        // Said once per run: an end that never lands (a programming error in its statement, say) is not silent.
        if (!this.failingWrites.has(jobId))
          this.o.log?.(`job ${jobId}: its end did not commit (${(err as Error)?.message ?? String(err)}); retrying until it does`);
        this.failingWrites.add(jobId);
        if (this.mode === "aborting") throw err;
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

  /** Starts jobs from the source while a slot is free and starts are allowed. */
  private async fill(): Promise<void> {
    const launch = (start: RunStart): void => this.launch(start);
    while (!this.stopped && this.slotsTaken() < this.o.concurrency && (this.o.mayStart?.() ?? true)) {
      if (!(await this.feed.startNext(launch))) return;
    }
  }

  /**
   * Runs a job the source started (see RunStart). `mayWait` (SourceHost.run): claimed perhaps ahead
   * of a free slot, its graph waits for one; any other run takes its slot at once.
   */
  private launch({ job, hooks, aborted = false, fence = { workerId: null, epoch: 0 }, resume = false, workflow }: RunStart, mayWait = false): void {
    const controller = new AbortController();
    const detacher = new AbortController();
    // A fill that was committing this start when the stop came launches it late: stop it too (it
    // never reached the engine), and give it up with the others.
    if (this.mode === "aborting") this.lateStarts.add(job.id);
    if (this.mode === "aborting" || aborted) controller.abort();
    this.running.set(job.id, controller);
    this.detachers.set(job.id, detacher);
    this.queue.started(job.owner);
    const extra = this.extras.get(job.id) ?? {};
    this.engineBusy.add(job.id);
    /** When the graph got its slot: its time in the engine tells whether to claim ahead. */
    let slotAt: number | undefined;
    const engineSlot = (signal: AbortSignal) =>
      this.slots.acquire(signal, !mayWait).then((release) => {
        slotAt = this.o.now();
        return release;
      });
    const engineDone = () => {
      if (slotAt !== undefined) this.ahead.ran(this.o.now() - slotAt);
      if (!this.engineBusy.delete(job.id)) return;
      // Its slot is claimed again by its end's statement, or freed when the run is over.
      if (this.feed.ridesEnds && this.mode === "dispatching") this.riding.add(job.id);
      else this.pump();
    };
    const deps = {
      ...this.o,
      engineSlot,
      engineDone,
      persistEnd: <T>(write: () => Promise<T>, giveUp?: (err: unknown) => boolean) => this.persistEnd(job.id, write, giveUp),
    };
    const p = runJob(deps, job, extra, controller.signal, hooks, fence, resume, detacher.signal, workflow)
      .catch(() => null)
      .finally(() => {
        this.failingWrites.delete(job.id);
        this.running.delete(job.id);
        this.engineBusy.delete(job.id);
        this.riding.delete(job.id);
        this.detachers.delete(job.id);
        this.feed.runEnded(job.id);
        this.extras.delete(job.id);
        this.queue.ended(job.owner);
        this.inflight.delete(p);
        this.drain.record(this.o.now());
        this.pump();
      });
    this.inflight.add(p);
  }
}
