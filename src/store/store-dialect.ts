// What each database's store implements behind CheckedStore (checked-store.ts): the Store's methods,
// given arguments already checked and normalized, so that no dialect repeats a check.
import type { AssetRecord, JobRecord, JobStatus, PendingBlob, PurgeResult, Store } from "./types.ts";

/** A listing's filters as CheckedStore hands them on: checked, distinct, the cursor decoded. */
export interface JobQuery {
  /** Rows to read at most: the page size plus one, which tells whether another page follows. */
  fetch: number;
  /** Only jobs with a seq below this one (the decoded cursor; MAX_SAFE_INTEGER for the first page). */
  before: number;
  /** Only jobs in one of these statuses (distinct, at least one); null: any status. */
  statuses: JobStatus[] | null;
  /** Only jobs carrying every one of these labels (1..MAX_LABEL_FILTERS); null: no label filter. */
  labels: Array<[string, string]> | null;
  /** Only this deployment's jobs. */
  deployment_id: string | undefined;
  /** Only jobs still in the hosted history. */
  in_history: boolean;
}

/**
 * A Store over one database, trusting its arguments: CheckedStore has checked every one (TypeError
 * or RangeError before any SQL), made status lists distinct and non-empty, applied the defaults of
 * optional counts and turned a listing into a JobQuery. The other methods take the Store's own
 * arguments, checked.
 */
export interface StoreDialect
  extends Omit<Store, "listJobs" | "queuedJobs" | "pendingBlobs" | "inlineBlobKeys" | "expireJobs" | "purgeExpired" | "listOutputsOfJobs"> {
  /** The assets of jobs `jobIds` (distinct, 1..MAX_PAGE), in one statement, ordered by job id, then commit order. */
  listOutputsOfJobs(jobIds: readonly string[]): Promise<AssetRecord[]>;
  /** An owner's jobs matching `query`, newest first, at most `query.fetch`. */
  listJobs(owner: string, query: JobQuery): Promise<JobRecord[]>;
  /** Store.queuedJobs with its limit checked and defaulted. */
  queuedJobs(limit: number, afterSeq: number, owner: string | undefined): Promise<JobRecord[]>;
  /** Store.pendingBlobs with its limit checked and defaulted. */
  pendingBlobs(afterKey: string, limit: number): Promise<PendingBlob[]>;
  /** Store.inlineBlobKeys with its arguments defaulted and checked. */
  inlineBlobKeys(afterKey: string, limit: number): Promise<string[]>;
  /** Store.expireJobs with its limit checked and defaulted. */
  expireJobs(now: number, limit: number): Promise<JobRecord[]>;
  /** Store.purgeExpired: terminal jobs and uploads expired at or before `cutoff` (now - grace), claims expired at `now`. */
  purgeExpired(now: number, cutoff: number, limit: number): Promise<PurgeResult>;
}
