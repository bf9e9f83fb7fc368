// How a process takes part in leased dispatch on a shared database (PostgreSQL); the database
// side is the store's JobLeases port (src/store/job-leases.ts).
import type { JobLeases } from "../store/index.ts";

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
  /**
   * Told after each claim whether this process wants to hear of new jobs at once: true when the
   * claim left slots free (nothing more was claimable), false when it filled them.
   */
  wantWakes?: (on: boolean) => void;
}
