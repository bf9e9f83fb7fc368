// Starts queued jobs when a slot is free, in FIFO order, and keeps the in-memory queue that
// answers queue positions. The store is the truth; the queue is rebuilt from it at start.
import { TerminalStatusError, type JobRecord, type Store } from "../store/index.ts";
import { DrainRate } from "./drain-rate.ts";
import type { EventBus } from "./event-bus.ts";
import { FifoQueue } from "./fifo-queue.ts";
import { runJob, type JobRunDeps } from "./job-run.ts";

export interface DispatcherOptions extends JobRunDeps {
  /** Jobs that run at once. */
  concurrency: number;
  /** Jobs of one owner that may run at once (cloud tiers); unlimited when absent. */
  slotsFor?: (owner: string) => Promise<number>;
  /** Whether jobs may start now (false while the data directory is short of space); always when absent. */
  mayStart?: () => boolean;
}

/** Backoff of retried store writes: the first wait, doubling up to the last. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;

/** The queue, the slots, and the runs in flight. */
export class Dispatcher {
  readonly queue = new FifoQueue();
  readonly drain = new DrainRate();
  private readonly o: DispatcherOptions;
  private readonly running = new Map<string, AbortController>();
  /** Owner of every queued and running job, and running jobs per owner, for tier limits. */
  private readonly owners = new Map<string, string>();
  private readonly runningPerOwner = new Map<string, number>();
  /** Each owner's queued jobs in queue order: tier-aware starts and `queue_remaining`. */
  private readonly queuedByOwner = new Map<string, FifoQueue>();
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

  constructor(options: DispatcherOptions) {
    this.o = options;
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
      for (const job of page) this.addQueued(job.id, job.owner);
      if (page.length < 5000) break;
      after = page[page.length - 1]!.seq;
    }
  }

  /**
   * Recovers after a restart and starts dispatching: jobs left running or canceling by a dead
   * process end `failed` with `worker_lost` (never `running` forever); queued jobs run in order.
   */
  async start(): Promise<void> {
    await this.load();
    const now = this.o.now();
    for (const job of await this.o.store.jobsInStatus(["running", "canceling"])) {
      const to = job.status === "canceling" ? "canceled" : "failed";
      const patch =
        to === "failed"
          ? { completed_at: now, error: { code: "worker_lost", message: "The worker running this job stopped before it finished." } }
          : { completed_at: now };
      await this.o.store.transitionJob(job.id, [job.status], to, patch).catch(ignoreTerminal);
    }
    this.started = true;
    this.pump();
  }

  /** A job just committed as queued. */
  enqueue(job: JobRecord, extra: { api_key_vendor_org?: string } | undefined): void {
    if (extra && Object.keys(extra).length > 0) this.extras.set(job.id, extra);
    this.addQueued(job.id, job.owner);
    this.pump();
  }

  /** Takes a queued job out of the queue (cancel, expiry). */
  dequeue(jobId: string): void {
    if (this.removeQueued(jobId)) this.owners.delete(jobId);
    this.extras.delete(jobId);
  }

  /** An owner's jobs waiting or running (canceling ones included until their run ends). */
  liveCount(owner: string): number {
    return (this.queuedByOwner.get(owner)?.size ?? 0) + (this.runningPerOwner.get(owner) ?? 0);
  }

  /** Asks a running job to stop at its next node or step boundary. */
  abort(jobId: string): boolean {
    const controller = this.running.get(jobId);
    controller?.abort();
    return controller !== undefined;
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
    for (const c of this.running.values()) c.abort();
    for (const wake of [...this.wakers]) wake();
    await this.settled();
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
  private async persistEnd<T>(jobId: string, write: () => Promise<T>): Promise<T> {
    for (let delay = RETRY_FIRST_MS; ; delay = Math.min(delay * 2, RETRY_MAX_MS)) {
      try {
        const result = await write();
        this.failingWrites.delete(jobId);
        return result;
      } catch (err) {
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
      const id = await this.nextStartable();
      if (id === undefined) return;
      const now = this.o.now();
      // The job keeps its place (position 0) until it is durably running.
      const job = await this.o.store.transitionJob(id, ["queued"], "running", { started_at: now }).catch(ignoreTerminal);
      this.removeQueued(id);
      if (!job) {
        this.extras.delete(id); // canceled or expired meanwhile
        this.owners.delete(id);
        continue;
      }
      this.events.publish({ type: "status", job });
      this.launch(job);
    }
  }

  /**
   * The first queued job whose owner has a free slot (FIFO among those that can start): the
   * earliest of the owners' first jobs, so however many jobs a busy owner has waiting, they never
   * hide another owner's job behind them.
   */
  private async nextStartable(): Promise<string | undefined> {
    if (!this.o.slotsFor) return this.queue.peek();
    let best: string | undefined;
    let bestPosition = Infinity;
    for (const [owner, queue] of this.queuedByOwner) {
      const head = queue.peek();
      const position = head === undefined ? null : this.queue.position(head);
      if (position === null || position >= bestPosition) continue;
      if ((this.runningPerOwner.get(owner) ?? 0) >= (await this.o.slotsFor(owner))) continue;
      best = head;
      bestPosition = position;
    }
    return best;
  }

  private addQueued(id: string, owner: string): void {
    if (!this.queue.push(id)) return;
    this.owners.set(id, owner);
    let mine = this.queuedByOwner.get(owner);
    if (!mine) this.queuedByOwner.set(owner, (mine = new FifoQueue()));
    mine.push(id);
  }

  /** Takes a job out of the queue and its owner's; false when it was not waiting. */
  private removeQueued(id: string): boolean {
    if (!this.queue.remove(id)) return false;
    const owner = this.owners.get(id) ?? "";
    const mine = this.queuedByOwner.get(owner);
    mine?.remove(id);
    if (mine?.size === 0) this.queuedByOwner.delete(owner);
    return true;
  }

  private launch(job: JobRecord): void {
    const controller = new AbortController();
    // A fill that was committing this start when the stop came launches it late: stop it too.
    if (this.abortingRuns) controller.abort();
    this.running.set(job.id, controller);
    this.runningPerOwner.set(job.owner, (this.runningPerOwner.get(job.owner) ?? 0) + 1);
    const extra = this.extras.get(job.id) ?? {};
    const deps = { ...this.o, persistEnd: <T>(write: () => Promise<T>) => this.persistEnd(job.id, write) };
    const p = runJob(deps, job, extra, controller.signal)
      .catch(() => null)
      .finally(() => {
        this.failingWrites.delete(job.id);
        this.running.delete(job.id);
        this.extras.delete(job.id);
        this.owners.delete(job.id);
        const left = (this.runningPerOwner.get(job.owner) ?? 1) - 1;
        if (left > 0) this.runningPerOwner.set(job.owner, left);
        else this.runningPerOwner.delete(job.owner);
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
