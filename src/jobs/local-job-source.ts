// The job source of a process that owns its queue (SQLite, one process): jobs start in the fair
// order of the in-memory queue, which was rebuilt from the store at start. With an engine that has
// a queue of its own (ComfyUI), a started run's job stays `queued` until the engine reports its
// graph running, and its position is what the engine reports ahead of it.
import { TerminalStatusError, type JobRecord } from "../store/index.ts";
import { PARTNER_KEY_LOST, WORKER_LOST } from "../domain/failures.ts";
import type { JobSource, LocalSourceHost, RunStart } from "./job-source.ts";

/** Jobs from this process's own queue. */
export class LocalJobSource implements JobSource {
  readonly shared = false;
  /** Starts are moves of this process's own queue: there is no claim to ride. */
  readonly ridesEnds = false;
  readonly failing = false;
  private readonly host: LocalSourceHost;
  /** Whether a run first waits in the engine's own queue (its job stays `queued` until it starts there). */
  private readonly engineQueues: boolean;
  /**
   * Jobs whose move to `running` is being committed, not launched yet, and whether a cancel
   * asked to stop them meanwhile: a read shows the job running once the move commits, before
   * it is durable and launched, and a cancel in that window must still stop the run.
   */
  private readonly starting = new Map<string, boolean>();
  /** Runs handed to an engine with its own queue and not started there yet: work ahead of each. */
  private readonly waitingInEngine = new Map<string, number>();
  /** Whether a run goes on in the engine when this process dies (ComfyUI's prompts): a restart follows it. */
  private readonly engineResumes: boolean;
  /** Jobs a dead process left running or canceling, to be followed in the engine (engineResumes): launched first. */
  private readonly resumed: JobRecord[] = [];

  constructor(host: LocalSourceHost, engineQueues: boolean, engineResumes = false) {
    this.host = host;
    this.engineQueues = engineQueues;
    this.engineResumes = engineResumes;
  }

  /**
   * Recovers after a restart: jobs left running or canceling by a dead process end `failed` with
   * `worker_lost` (never `running` forever), except with an engine whose runs go on without us
   * (ComfyUI's prompts): a running job is followed to its real end, a canceling one is stopped
   * there and ends canceled (both launched first); queued jobs submitted with secrets (a partner key),
   * which lived in the dead process's memory only, end `failed` with `partner_key_lost` rather
   * than run without them.
   */
  async start(): Promise<void> {
    const { store, events, queue, secrets } = this.host;
    const now = this.host.now();
    for (const job of await store.jobsInStatus(["running", "canceling"])) {
      if (this.engineResumes) {
        this.resumed.push(job);
        continue;
      }
      const to = job.status === "canceling" ? "canceled" : "failed";
      const patch = to === "failed" ? { completed_at: now, error: { ...WORKER_LOST } } : { completed_at: now };
      await store.transitionJob(job.id, [job.status], to, patch).catch(ignoreTerminal);
    }
    for (const id of await store.queuedJobsWithSecrets()) {
      // A job submitted to this process since it started listening still has its key here.
      if (secrets.has(id)) continue;
      const error = { ...PARTNER_KEY_LOST };
      // Through `running`, as every failure (the state machine has no queued -> failed).
      const started = await store.transitionJob(id, ["queued"], "running", { started_at: now }).catch(ignoreTerminal);
      queue.remove(id);
      if (!started) continue;
      const job = await store.transitionJob(id, ["running"], "failed", { completed_at: now, error }).catch(ignoreTerminal);
      if (job) events.publish({ type: "status", job });
    }
  }

  wantsWork(): boolean {
    return true;
  }

  async startNext(launch: (start: RunStart) => void): Promise<boolean> {
    const again = this.resumed.shift();
    if (again) {
      launch({ job: again, aborted: again.status === "canceling", resume: true });
      return true;
    }
    const id = await this.nextStartable();
    if (id === undefined) return false;
    const unsent = this.host.newIds.delete(id);
    if (this.engineQueues) {
      await this.handToEngine(id, launch, unsent);
      return true;
    }
    const { store, queue, secrets } = this.host;
    // The job keeps its place (position 0) until it is durably running.
    this.starting.set(id, false);
    const job = await store.transitionJob(id, ["queued"], "running", { started_at: this.host.now() }).catch((err: unknown) => {
      this.starting.delete(id);
      return ignoreTerminal(err);
    });
    const aborted = this.starting.get(id) === true;
    this.starting.delete(id);
    queue.remove(id);
    if (!job) {
      secrets.delete(id); // canceled or expired meanwhile
      return true;
    }
    this.host.events.publish({ type: "status", job });
    launch({ job, aborted });
    return true;
  }

  /**
   * The next job in fair order whose owner has a free slot (cloud tiers): the first job of the
   * owner with the fewest jobs running, ties by submission order. However many jobs a busy owner
   * has waiting, another owner's job never waits behind them for more than one run.
   */
  private async nextStartable(): Promise<string | undefined> {
    const { queue, slotsFor } = this.host;
    for (const { id, owner } of queue.heads()) {
      if (!slotsFor || queue.running(owner) < (await slotsFor(owner))) return id;
    }
    return undefined;
  }

  /**
   * Starts the run of a job that stays `queued` until the engine reports it running; `unsent`: no
   * process handed it to the engine before (its id made by this process, which alone starts its jobs).
   */
  private async handToEngine(id: string, launch: (start: RunStart) => void, unsent: boolean): Promise<void> {
    const job = await this.host.store.getJob(id);
    // A cancel or an expiry that came during the read has taken it out of the queue already.
    if (!this.host.queue.remove(id)) return;
    if (job?.status !== "queued") {
      this.host.secrets.delete(id);
      return;
    }
    this.waitingInEngine.set(id, 0);
    const hooks = {
      onQueued: (ahead: number) => {
        if (this.waitingInEngine.has(id)) this.waitingInEngine.set(id, ahead);
      },
      onRunning: () => void this.waitingInEngine.delete(id),
      ...(unsent ? { unsent: true } : {}),
    };
    launch({ job, hooks });
  }

  abortStarting(jobId: string): boolean {
    if (!this.starting.has(jobId)) return false;
    this.starting.set(jobId, true); // its launch aborts it
    return true;
  }

  dequeued(jobId: string): boolean {
    return this.waitingInEngine.has(jobId);
  }

  runEnded(jobId: string): void {
    this.waitingInEngine.delete(jobId);
  }

  changed(): void {}

  /**
   * Jobs waiting in this process's queue come after everything waiting in the engine's queue;
   * a job handed to the engine is where the engine says.
   */
  async position(jobId: string): Promise<number | null> {
    const inEngine = this.waitingInEngine.get(jobId);
    if (inEngine !== undefined) return inEngine;
    // Asked about a row read as queued just before its start committed (an asynchronous store):
    // it was at the front.
    if (this.host.runs(jobId)) return 0;
    const mine = this.host.queue.position(jobId);
    if (mine === null) return null;
    let engineAhead = 0;
    for (const ahead of this.waitingInEngine.values()) engineAhead = Math.max(engineAhead, ahead + 1);
    return mine + engineAhead;
  }

  positionOfNew(job: { id: string }): Promise<number | null> {
    return this.position(job.id);
  }

  async liveCount(owner: string): Promise<number> {
    return this.host.queue.waiting(owner) + this.host.queue.running(owner);
  }

  async queueDepth(): Promise<number> {
    return this.host.queue.size;
  }

  stop(): void {}

  /** Nothing to give back: the next start of this data directory recovers what was left. */
  async release(): Promise<void> {}
}

function ignoreTerminal(err: unknown): null {
  if (err instanceof TerminalStatusError) return null;
  throw err;
}
