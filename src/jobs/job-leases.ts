// Jobs claimed under a lease, for several processes sharing one database (PostgreSQL). A worker
// claims the next queued job, renews the leases of the jobs it runs on a heartbeat, and learns
// from the renewal which of them were canceled or taken from it; any process fails the live jobs
// whose lease passed (`worker_lost`). The job row stays the single source of truth.
import type { JobRecord, JobStatus, Store } from "../store/index.ts";
import type { EventBus } from "./event-bus.ts";

/** The database side of leases. */
export interface JobLeases {
  /**
   * Moves the next claimable queued job (submission order, `lastOwners` after the rest) to
   * `running` under this worker's lease, atomically across processes; null when there is none.
   * `slots(owner)` is asked, under a lock that serializes claims, for the owners with jobs running.
   */
  claim(workerId: string, leaseMs: number, startedAt: number, slots: ((owner: string) => Promise<number>) | undefined, heldSecrets: readonly string[]): Promise<JobRecord | null>;
  /** Extends the leases of this worker's live jobs among `ids`; returns the status of each it still holds. */
  renew(workerId: string, ids: readonly string[], leaseMs: number): Promise<Map<string, JobStatus>>;
  /** Fails `worker_lost` every live job whose lease passed (by the database's clock); the jobs it moved. */
  failExpired(completedAt: number): Promise<JobRecord[]>;
  /** Of `ids`, those no longer queued (taken by a worker, canceled or expired elsewhere). */
  notQueued(ids: readonly string[]): Promise<string[]>;
  /** Calls `onChange` with the id of every job whose status changes, in any process; returns the stop. */
  listenStatus(onChange: (jobId: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** How a process takes part in leased dispatch. */
export interface LeaseOptions {
  leases: JobLeases;
  /** This process's id in `jobs.worker_id`. */
  workerId: string;
  /** How long a claim holds without a renewal. */
  leaseMs: number;
  /** Whether this process runs jobs (false: an API node, `serve --no-dispatch`). */
  dispatch: boolean;
}

/** The error of a job whose worker stopped renewing its lease. */
export const WORKER_LOST = { code: "worker_lost", message: "The worker running this job stopped before it finished." } as const;

/**
 * Turns status changes heard from the database into status events for this process's
 * subscribers of each job (SSE streams), read from the store one after another so they go out in
 * order. Jobs this process runs are left out: their own events (progress before the end) tell more.
 */
export function followRemoteStatus(store: Store, events: EventBus, runsHere: (jobId: string) => boolean): (jobId: string) => void {
  let chain = Promise.resolve();
  return (jobId) => {
    if (events.listenerCount(jobId) === 0 || runsHere(jobId)) return;
    chain = chain
      .then(async () => {
        const job = await store.getJob(jobId);
        if (job) events.publishRemote({ type: "status", job });
      })
      .catch(() => undefined); // a failed read: the stream resynchronizes on its next event or reconnect
  };
}
