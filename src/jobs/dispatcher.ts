// Starts queued jobs when a slot is free, sharing the slots fairly between the owners with jobs
// waiting, and keeps the in-memory queue that answers queue positions. The store is the truth;
// the queue is rebuilt from it at start.
import { TerminalStatusError, type JobRecord, type Store } from "../store/index.ts";
import { DrainRate } from "./drain-rate.ts";
import type { EventBus } from "./event-bus.ts";
import { FairQueue } from "./fair-queue.ts";
import { runJob, type JobRunDeps } from "./job-run.ts";

export interface DispatcherOptions extends JobRunDeps {
  /** Jobs that run at once. */
  concurrency: number;
  /** Jobs of one owner that may run at once (cloud tiers); unlimited when absent. */
  slotsFor?: (owner: string) => Promise<number>;
}

/** The queue, the slots, and the runs in flight. */
export class Dispatcher {
  /** Waiting jobs in start order, and each owner's running count. */
  readonly queue = new FairQueue();
  readonly drain = new DrainRate();
  private readonly o: DispatcherOptions;
  private readonly running = new Map<string, AbortController>();
  /** Secrets of queued and running jobs, in memory only, dropped when the run ends. */
  private readonly extras = new Map<string, { api_key_vendor_org?: string }>();
  private readonly inflight = new Set<Promise<unknown>>();
  private pumping = false;
  private pumpAgain = false;
  private stopped = false;
  /** Ends the grace period of a stop under way. */
  private endGrace: (() => void) | undefined;
  /** Set when a stop's grace is over: every run, even one a fill launches later, is aborted. */
  private abortingRuns = false;

  constructor(options: DispatcherOptions) {
    this.o = options;
  }

  private get events(): EventBus {
    return this.o.events;
  }

  /**
   * Recovers after a restart: jobs left running or canceling by a dead process end `failed`
   * with `worker_lost` (never `running` forever); queued jobs wait again in their order, except
   * those submitted with secrets (a partner key), which lived in this memory only: they end
   * `failed` with `partner_key_lost` rather than run without them.
   */
  async start(): Promise<void> {
    const now = this.o.now();
    for (const job of await this.o.store.jobsInStatus(["running", "canceling"])) {
      const to = job.status === "canceling" ? "canceled" : "failed";
      const patch =
        to === "failed"
          ? { completed_at: now, error: { code: "worker_lost", message: "The worker running this job stopped before it finished." } }
          : { completed_at: now };
      await this.o.store.transitionJob(job.id, [job.status], to, patch).catch(ignoreTerminal);
    }
    for (const id of await this.o.store.queuedJobsWithSecrets()) {
      const error = { code: "partner_key_lost", message: "The partner key given with this job is kept in memory only and did not survive a server restart; submit the job again." };
      // Through `running`, as every failure (the state machine has no queued -> failed).
      const started = await this.o.store.transitionJob(id, ["queued"], "running", { started_at: now }).catch(ignoreTerminal);
      if (!started) continue;
      const job = await this.o.store.transitionJob(id, ["running"], "failed", { completed_at: now, error }).catch(ignoreTerminal);
      if (job) this.events.publish({ type: "status", job });
    }
    let after = 0;
    for (;;) {
      const page = await this.o.store.queuedJobs(5000, after);
      for (const job of page) this.queue.push(job.id, job.owner);
      if (page.length < 5000) break;
      after = page[page.length - 1]!.seq;
    }
    this.pump();
  }

  /** A job just committed as queued. */
  enqueue(job: JobRecord, extra: { api_key_vendor_org?: string } | undefined): void {
    if (extra && Object.keys(extra).length > 0) this.extras.set(job.id, extra);
    this.queue.push(job.id, job.owner);
    this.pump();
  }

  /** Takes a queued job out of the queue (cancel, expiry). */
  dequeue(jobId: string): void {
    this.queue.remove(jobId);
    this.extras.delete(jobId);
  }

  /** An owner's jobs waiting or running (canceling ones included until their run ends). */
  liveCount(owner: string): number {
    return this.queue.waiting(owner) + this.queue.running(owner);
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
    for (const c of this.running.values()) c.abort();
    await this.settled();
  }

  /** Resolves once no fill and no run is in flight (a fill under way may still launch one run). */
  private async settled(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /** Fills free slots from the queue; a call during a fill makes it run once more after. */
  pump(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    // Every slot is taken (the usual case while a queue waits): the end of a run pumps again.
    if (this.running.size >= this.o.concurrency) return;
    this.pumping = true;
    const p = this.fill().finally(() => {
      this.pumping = false;
      this.inflight.delete(p);
      if (this.pumpAgain) {
        this.pumpAgain = false;
        this.pump();
      }
    });
    this.inflight.add(p);
  }

  private async fill(): Promise<void> {
    while (!this.stopped && this.running.size < this.o.concurrency) {
      const id = await this.nextStartable();
      if (id === undefined) return;
      const now = this.o.now();
      // The job keeps its place (position 0) until it is durably running.
      const job = await this.o.store.transitionJob(id, ["queued"], "running", { started_at: now }).catch(ignoreTerminal);
      this.queue.remove(id);
      if (!job) {
        this.extras.delete(id); // canceled or expired meanwhile
        continue;
      }
      this.events.publish({ type: "status", job });
      this.launch(job);
    }
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

  private launch(job: JobRecord): void {
    const controller = new AbortController();
    // A fill that was committing this start when the stop came launches it late: stop it too.
    if (this.abortingRuns) controller.abort();
    this.running.set(job.id, controller);
    this.queue.started(job.owner);
    const extra = this.extras.get(job.id) ?? {};
    const p = runJob(this.o, job, extra, controller.signal)
      .catch(() => null)
      .finally(() => {
        this.running.delete(job.id);
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
