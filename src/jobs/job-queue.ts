// What the job service and the reaper ask of the dispatcher (src/jobs/dispatcher.ts): queue a
// job, take it out, stop its run, say where it waits and when a full queue will have room. They
// see nothing of its slots, its job source or the secrets it holds.
import type { JobRecord } from "../store/index.ts";
import type { JobSecrets } from "./job-source.ts";

/** The dispatcher as the job service sees it. */
export interface JobQueue {
  /** A job just committed as queued, with its secrets (memory only); `newId`: its id was made here as it was accepted. */
  enqueue(job: JobRecord, extra: JobSecrets | undefined, newId?: boolean): void;
  /** Takes a queued job out of the queue (cancel, expiry); one already handed to the engine is stopped there. */
  dequeue(jobId: string): void;
  /** Asks a running job to stop at its next node or step boundary; false when this process does not run it. */
  abort(jobId: string): boolean;
  /** Jobs or engine work ahead of a queued job (0: next); null when it is not queued. */
  position(jobId: string, read?: JobRecord): Promise<number | null>;
  /** The position of a job this process has just queued. */
  positionOfNew(job: JobRecord): Promise<number | null>;
  /** Jobs waiting in this process's queue (with leases: those this node knows). */
  readonly waiting: number;
  /** Whether several processes share the queue (PostgreSQL leases): `waiting` is then only this node's part. */
  readonly sharesQueue: boolean;
  /** Seconds until `ahead` jobs have left the queue at the recent drain rate (a 429's Retry-After). */
  retryAfterSeconds(ahead: number): number;
  /** A queued job left without running (a cancel): it counts toward the drain rate. */
  left(): void;
}

/** What the reaper asks of the dispatcher when a job expires. */
export type ExpiringJobs = Pick<JobQueue, "dequeue" | "abort">;
