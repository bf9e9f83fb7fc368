// Live events across processes (PostgreSQL deployments): what the processes tell each other,
// and how a process turns what it hears into events for its own subscribers, in the order heard.
import type { EventBus, JobEvent } from "../jobs/event-bus.ts";
import { isTerminalStatus, statusRank, type JobRecord, type JobStatus, type Notifications, type Store } from "../store/index.ts";

/** An event of a run, as relayed (status changes travel as notices of the database instead). */
export type RunEvent = Exclude<JobEvent, { type: "status" }>;

/** What one process hears of the others. */
export type RemoteNotice =
  /** A job's status changed (the row is the truth: the listener reads it, unless `job` carries it as the change wrote it). */
  | { kind: "status"; id: string; owner: string; status: JobStatus; job?: JobRecord }
  /** Events of runs another process runs. */
  | { kind: "events"; events: RunEvent[] }
  /** Another process queued jobs: look for work now rather than at the next heartbeat. */
  | { kind: "wake" }
  /** The listener was lost and listens again: what was said meanwhile was not heard, and must be read. */
  | { kind: "resync" };

/** The transport between the processes of one deployment. */
export interface EventRelay {
  /** Sends an event of a run of this process to the others (lossy: the job record is the truth). */
  send(event: RunEvent): void;
  /** Tells the other processes that jobs were queued (one notice per turn of the event loop). */
  wake(): void;
  /** Resolves once everything sent so far has left (or was given up). */
  flushed(): Promise<void>;
  /**
   * Runs a write of a run once what was sent before has committed, giving it the events waiting
   * to go out in its own transaction (they are sent again later if it fails), and `then`, sent
   * after them only when the write changes its row. `jobId`: the write is that job's, and carries
   * that job's events only (it waits for that job's writes, not other jobs').
   */
  carry<T>(write: (notify: Notifications | undefined) => Promise<T>, then?: readonly RunEvent[], jobId?: string): Promise<T>;
  /**
   * Calls `onNotice` for what other processes report, in the order they committed it; returns the
   * stop. `wakesOnly`: only the wakes (a process that follows no other process's jobs); `follow`
   * and `wakes`: what is wanted at first (default: both), changed later by wantFollow and wantWakes.
   */
  listen(onNotice: (notice: RemoteNotice) => void, options?: { wakesOnly?: boolean; follow?: boolean; wakes?: boolean }): Promise<() => Promise<void>>;
  /** Whether wakes are wanted now (a dispatching process with free slots and nothing claimable). */
  wantWakes(on: boolean): void;
  /** Whether this process follows other processes' jobs now (streams, sockets): a listener costs the database a transaction per notifying commit. */
  wantFollow(on: boolean): void;
  /** Resolves once the listener listens as wanted now. */
  listening(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Turns notices into remote events on the bus, one after another so they go out in the order
 * heard (a status is read from the store first). Jobs nobody here listens to are skipped, and so
 * are the jobs this process runs: its own events tell more. A wake calls `onWake` at once, and
 * `onQueueChange` hears of every wake and status change. After a resync (the listener was lost),
 * every job a stream or socket here follows is read again and its status told where it changed,
 * so that an end said in the gap still reaches them.
 */
export function followRemote(
  store: Store,
  events: EventBus,
  runsHere: (jobId: string) => boolean,
  onWake: () => void,
  onQueueChange: (jobId?: string, status?: JobStatus) => void,
): (notice: RemoteNotice) => void {
  let chain = Promise.resolve();
  /** Jobs of other processes heard of, not yet ended, that someone here follows (the hosted socket follows them by owner). */
  const unfinished = new Set<string>();
  return (notice) => {
    if (notice.kind === "wake") {
      onQueueChange();
      return onWake();
    }
    if (notice.kind === "resync") {
      onQueueChange();
      onWake();
      const ids = new Set([...events.followedJobs(), ...unfinished]);
      for (const id of ids) {
        if (runsHere(id)) continue;
        chain = chain
          .then(async () => {
            const job = await store.getJob(id);
            if (job === null || isTerminalStatus(job.status)) unfinished.delete(id);
            if (job !== null && events.wantsRemote(id, job.owner)) events.publishRemote({ type: "status", job });
          })
          .catch(() => undefined); // a failed read: that stream resynchronizes on its next event or reconnect
      }
      return;
    }
    if (notice.kind === "status") {
      onQueueChange(notice.id, notice.status);
      if (runsHere(notice.id) || !events.wantsRemote(notice.id, notice.owner)) return;
      if (isTerminalStatus(notice.status)) unfinished.delete(notice.id);
      else unfinished.add(notice.id);
      chain = chain
        .then(async () => {
          const job = notice.job ?? (await store.getJob(notice.id));
          const heard = job && asHeard(job, notice.status);
          if (heard) events.publishRemote({ type: "status", job: heard });
        })
        .catch(() => undefined); // a failed read: streams resynchronize on their next event or reconnect
      return;
    }
    const wanted = notice.events.filter((e) => !runsHere(e.job_id) && events.wantsRemote(e.job_id, e.owner));
    if (wanted.length > 0)
      chain = chain.then(() => {
        for (const e of wanted) events.publishRemote(e);
      });
  };
}

/**
 * The job as the notice saw it. A read that already shows a later status (a short run ended
 * before its start's notice was read) would tell the end twice and the start never: the start is
 * told as it was (running, not yet ended); any other passed status is left to its own notice.
 */
function asHeard(job: JobRecord, status: JobStatus): JobRecord | null {
  if (job.status === status || statusRank(job.status) <= statusRank(status)) return job;
  if (status !== "running") return null;
  return { ...job, status: "running", completed_at: null, error: null };
}
