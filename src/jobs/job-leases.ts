// Jobs claimed under a lease, for several processes sharing one database (PostgreSQL). A worker
// claims the next queued job, renews the leases of the jobs it runs on a heartbeat, and learns
// from the renewal which of them were canceled or taken from it; any process fails the live jobs
// whose lease passed (`worker_lost`). The job row stays the single source of truth.
import type { JobRecord, JobStatus } from "../store/index.ts";
import type { OwnerCounts } from "./queue-counts.ts";

/** The database side of leases. */
export interface JobLeases {
  /**
   * Moves the next claimable queued job (in the fair order of src/jobs/fair-queue.ts; owners at
   * their `slots` skipped, others' secret jobs too) to `running` under this worker's lease,
   * atomically across processes; null when there is none. `onlyHeld`: among `heldSecrets` only.
   */
  claim(workerId: string, leaseMs: number, startedAt: number, slots: ((owner: string) => Promise<number>) | undefined, heldSecrets: readonly string[], onlyHeld?: boolean): Promise<JobRecord | null>;
  /** Queued jobs that start before this one in that order, across every process; null when it is not queued. */
  position(jobId: string): Promise<number | null>;
  /** Every owner's queued and running jobs, across every process. */
  queueCounts(): Promise<OwnerCounts[]>;
  /** An owner's queued and running jobs, across every process. */
  liveCount(owner: string): Promise<number>;
  /**
   * Extends the leases of this worker's live jobs among `ids`, and takes or extends those of the
   * queued jobs among them whose secrets it holds; returns the status of each it holds.
   */
  renew(workerId: string, ids: readonly string[], leaseMs: number): Promise<Map<string, JobStatus>>;
  /**
   * Fails `worker_lost` every live job whose lease passed (by the database's clock), and
   * `partner_key_lost` every queued job whose secrets' holder stopped renewing; the jobs it moved.
   */
  failExpired(completedAt: number): Promise<JobRecord[]>;
  /** Of `ids`, those no longer queued (taken by a worker, canceled or expired elsewhere). */
  notQueued(ids: readonly string[]): Promise<string[]>;
  close(): Promise<void>;
}

/** How a process takes part in leased dispatch. */
export interface LeaseOptions {
  leases: JobLeases;
  /** This process's id in `jobs.worker_id`. */
  workerId: string;
  /** How long a claim holds without a renewal. */
  leaseMs: number;
  /**
   * Whether this process runs jobs (false: an API node, `serve --no-dispatch`, which runs only the
   * jobs submitted to it with secrets: only it holds them, in memory).
   */
  dispatch: boolean;
}

/** The error of a job whose worker stopped renewing its lease. */
export const WORKER_LOST = { code: "worker_lost", message: "The worker running this job stopped before it finished." } as const;

/** The error of a job whose secrets (`extra_data`, memory only) were lost with the process holding them. */
export const PARTNER_KEY_LOST = {
  code: "partner_key_lost",
  message: "The partner key given with this job is kept in memory only and did not survive a server restart; submit the job again.",
} as const;
