// Live job events. SSE streams and WebSockets subscribe; the job record stays the source of
// truth, so a subscriber that misses an event resynchronizes from a read. With several processes
// (PostgreSQL), the events of runs go out to the others through a relay (src/relay/) and come
// back in through `publishRemote`.
import type { AssetRecord, JobRecord, JobStatus, Notifications } from "../store/index.ts";
import type { Progress } from "./progress.ts";

/** One live event of one job. */
export type JobEvent =
  | { type: "status"; job: JobRecord }
  | { type: "progress"; job_id: string; owner: string; progress: Progress }
  | { type: "preview"; job_id: string; owner: string; node_id: string; content_type: string; data: Buffer }
  | { type: "output"; job_id: string; owner: string; asset: AssetRecord }
  | { type: "node_start"; job_id: string; owner: string; node_id: string; class_type: string }
  | { type: "node_done"; job_id: string; owner: string; node_id: string; class_type: string; ui: Record<string, unknown> | null }
  | { type: "cached"; job_id: string; owner: string; node_ids: string[] }
  | { type: "step"; job_id: string; owner: string; node_id: string; value: number; max: number }
  | { type: "activity"; job_id: string; owner: string; node_id: string; activity: string | null }
  | { type: "log"; job_id: string; owner: string; node_id?: string | null; text: string };

export type JobEventListener = (event: JobEvent) => void;

/** Options of a listener of every job. */
export interface SubscribeAllOptions {
  /**
   * Also hear what other processes report of this owner's jobs (the hosted WebSocket). Absent:
   * this process's events only (metrics and charging count what this process does).
   */
  remote?: (owner: string) => boolean;
}

/** Where the events of this process's runs go for the other processes (src/relay/). */
export interface EventOutbox {
  send(event: Exclude<JobEvent, { type: "status" }>): void;
  /** Resolves once everything sent so far is on its way: a run's end commits after its events. */
  flushed(): Promise<void>;
  /**
   * Runs a run's write once what was sent before has committed, with the events still waiting to
   * ride in its transaction, and `then` after them only when the write changes its row; with
   * `jobId`, that job's events only, after that job's earlier writes (other jobs' go meanwhile).
   */
  carry<T>(write: (notify: Notifications | undefined) => Promise<T>, then?: readonly Exclude<JobEvent, { type: "status" }>[], jobId?: string): Promise<T>;
}

/** How long a process keeps listening to other processes after the last follower here stopped. */
export const FOLLOWING_LINGER_MS = 2_000;

/** Fan-out of job events by job id, plus listeners of every job (the hosted WebSocket). */
export class EventBus {
  private readonly byJob = new Map<string, Set<JobEventListener>>();
  private readonly all = new Set<JobEventListener>();
  /** Listeners of every job that also hear other processes, with the owners each wants. */
  private readonly allRemote = new Map<JobEventListener, (owner: string) => boolean>();
  private outbox: EventOutbox | null = null;
  /**
   * While a job has subscribers: the status this process last published for it, and the one last
   * heard from another process (`publishRemote`), so that a change both report goes out once.
   */
  private readonly localStatus = new Map<string, JobStatus>();
  private readonly remoteStatus = new Map<string, JobStatus>();
  /** Followers of other processes' jobs besides the jobs' subscribers (the hosted sockets while any is open). */
  private follows = 0;
  /** Whether this process follows other processes' jobs, as last told (see watchFollowing). */
  private toldFollowing = false;
  private followingOff: NodeJS.Timeout | undefined;
  private followingWatch: { changed: (on: boolean) => void; heard: () => Promise<void> } | null = null;

  /** Listens to one job; returns the unsubscribe function. */
  subscribe(jobId: string, listener: JobEventListener): () => void {
    let set = this.byJob.get(jobId);
    if (!set) this.byJob.set(jobId, (set = new Set()));
    set.add(listener);
    this.followingChanged();
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.byJob.get(jobId) === set) {
        this.byJob.delete(jobId);
        this.localStatus.delete(jobId);
        this.remoteStatus.delete(jobId);
        this.followingChanged();
      }
    };
  }

  /** Follows other processes' jobs until the returned function is called (the hosted sockets, by owner). */
  follow(): () => void {
    this.follows++;
    this.followingChanged();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.follows--;
      this.followingChanged();
    };
  }

  /** Whether anyone here follows jobs other processes may run: a job's subscriber, or a `follow`. */
  get following(): boolean {
    return this.byJob.size > 0 || this.follows > 0;
  }

  /**
   * Tells `changed` whether anyone here follows other processes' jobs (the relay listens only
   * then: each notification heard costs the database a transaction), at once when someone starts
   * and FOLLOWING_LINGER_MS after the last one stopped (streams come and go); `heard` resolves
   * once what they say is heard.
   */
  watchFollowing(changed: (on: boolean) => void, heard: () => Promise<void>): void {
    this.followingWatch = { changed, heard };
    this.toldFollowing = this.following;
    changed(this.toldFollowing);
  }

  /** Resolves once what other processes say of the jobs followed here is heard (at once without a relay). */
  async hearing(): Promise<void> {
    await this.followingWatch?.heard();
  }

  private followingChanged(): void {
    const watch = this.followingWatch;
    if (watch === null) return;
    if (this.following) {
      clearTimeout(this.followingOff);
      this.followingOff = undefined;
      if (!this.toldFollowing) {
        this.toldFollowing = true;
        watch.changed(true);
      }
    } else if (this.toldFollowing && this.followingOff === undefined) {
      this.followingOff = setTimeout(() => {
        this.followingOff = undefined;
        if (this.following || !this.toldFollowing) return;
        this.toldFollowing = false;
        watch.changed(false);
      }, FOLLOWING_LINGER_MS);
      this.followingOff.unref();
    }
  }

  /** Listens to every job; returns the unsubscribe function. */
  subscribeAll(listener: JobEventListener, options: SubscribeAllOptions = {}): () => void {
    this.all.add(listener);
    if (options.remote) this.allRemote.set(listener, options.remote);
    return () => {
      this.all.delete(listener);
      this.allRemote.delete(listener);
    };
  }

  /** Whether events go to other processes too (relayTo). */
  get relays(): boolean {
    return this.outbox !== null;
  }

  /** Sends the events of this process's runs (all but status changes) to other processes too. */
  relayTo(outbox: EventOutbox): void {
    this.outbox = outbox;
  }

  /** Resolves once the events published so far have left for the other processes (at once without a relay). */
  async relayed(): Promise<void> {
    await this.outbox?.flushed();
  }

  /**
   * Runs a write of a run; with a relay, after the events sent before it have committed, and with
   * those still waiting in its own transaction (one commit instead of two; still in order). With
   * `jobId`, only that job's events ride, and writes of other jobs do not wait for this one.
   */
  carry<T>(write: (notify: Notifications | undefined) => Promise<T>, then?: readonly Exclude<JobEvent, { type: "status" }>[], jobId?: string): Promise<T> {
    return this.outbox === null ? write(undefined) : this.outbox.carry(write, then, jobId);
  }

  /** Whether anyone here listens to what other processes report of this job (of this owner, when known). */
  wantsRemote(jobId: string, owner?: string): boolean {
    if (this.byJob.has(jobId)) return true;
    if (owner === undefined) return this.allRemote.size > 0;
    for (const wants of this.allRemote.values()) if (wants(owner)) return true;
    return false;
  }

  /**
   * Delivers an event; a throwing listener never disturbs the others or the run. `carried`: the
   * other processes were told already (it rode in a write's transaction, see `carry`).
   */
  publish(event: JobEvent, carried = false): void {
    const jobId = event.type === "status" ? event.job.id : event.job_id;
    const set = this.byJob.get(jobId);
    let heard = false;
    if (set && event.type === "status") {
      this.localStatus.set(jobId, event.job.status);
      heard = this.remoteStatus.get(jobId) === event.job.status;
      this.remoteStatus.delete(jobId);
    }
    if (set && !heard) for (const l of [...set]) safeCall(l, event);
    for (const l of this.all) safeCall(l, event);
    if (this.outbox && event.type !== "status" && !carried) this.outbox.send(event);
  }

  /**
   * Delivers an event another process reported (a status change it made, or an event of a run it
   * runs) to the job's own subscribers and to the listeners of every job that asked for remote
   * events of its owner; metrics and charging count what this process does, and the process
   * that made the change counts it. A status this process already published is skipped.
   */
  publishRemote(event: JobEvent): void {
    const jobId = event.type === "status" ? event.job.id : event.job_id;
    const owner = event.type === "status" ? event.job.owner : event.owner;
    const set = this.byJob.get(jobId);
    if (event.type === "status") {
      const status = event.job.status;
      if (this.localStatus.get(jobId) === status || this.remoteStatus.get(jobId) === status) return;
      if (set) this.remoteStatus.set(jobId, status);
    }
    if (set) for (const l of [...set]) safeCall(l, event);
    for (const [l, wants] of this.allRemote) if (wants(owner)) safeCall(l, event);
  }

  /** Ids of the jobs with subscribers here (a relay's listener reads them again after it was lost). */
  followedJobs(): string[] {
    return [...this.byJob.keys()];
  }

  /** Open subscriptions of one job (tests and metrics). */
  listenerCount(jobId?: string): number {
    return jobId === undefined ? [...this.byJob.values()].reduce((n, s) => n + s.size, 0) : (this.byJob.get(jobId)?.size ?? 0);
  }
}

function safeCall(listener: JobEventListener, event: JobEvent): void {
  try {
    listener(event);
  } catch {
    // A subscriber's failure is its own (for example a socket that just closed).
  }
}
