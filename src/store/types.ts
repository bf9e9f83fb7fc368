// The persistence contract the job and server layers program against. Every operation is
// asynchronous so that a networked implementation (PostgreSQL) fits behind the same interface.
// Field names are snake_case like the HTTP contract; every time is integer epoch milliseconds.

import { type HOSTED_FILE_TYPES, JOB_STATUSES as CONTRACT_JOB_STATUSES, type OUTPUT_TYPES, TERMINAL_JOB_STATUSES } from "../../generated/enums.ts";
import type { components } from "../../generated/openapi-types.ts";
import type { ComfyExecutionDetails } from "../domain/failures.ts";
import type { ClaimRider } from "./job-leases.ts";

/** A JSON object as stored (progress snapshots, error details, workflow graphs). */
export type JsonObject = Record<string, unknown>;
/** A job's progress snapshot, as the contract's Progress. */
export type JobProgress = components["schemas"]["Progress"];
/**
 * A failed job's error: the contract's JobError, with ComfyUI's own fields of the failure when it
 * ran in front of ComfyUI (the hosted interface's only; a v2 answer leaves them out).
 */
export type JobFailure = components["schemas"]["JobError"] & { comfy?: ComfyExecutionDetails };

/** Every job status, in the spec's order. */
export const JOB_STATUSES: readonly JobStatus[] = CONTRACT_JOB_STATUSES;

/** Every status of a v2 job. */
export type JobStatus = (typeof CONTRACT_JOB_STATUSES)[number];

/** Statuses that never change once reached (the database refuses it). */
export const TERMINAL_STATUSES = TERMINAL_JOB_STATUSES;

/** Statuses of a job still in flight: every status that is not terminal. */
export const LIVE_STATUSES = CONTRACT_JOB_STATUSES.filter(
  (s): s is Exclude<JobStatus, (typeof TERMINAL_JOB_STATUSES)[number]> => !(TERMINAL_JOB_STATUSES as readonly string[]).includes(s),
);

/** True for succeeded, canceled, failed and expired. */
export function isTerminalStatus(status: JobStatus): boolean {
  return (TERMINAL_STATUSES as readonly JobStatus[]).includes(status);
}

/**
 * A status's place in a job's life: queued 0, running 1, canceling 2, terminal 3. A job's status
 * only ever moves up, so of two reports of one job the higher is the newer.
 */
export function statusRank(status: JobStatus): number {
  if (isTerminalStatus(status)) return 3;
  return status === "canceling" ? 2 : status === "running" ? 1 : 0;
}

/** Default lifetime of an idempotency claim (the seed's 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * A stored job. The submitted graph and the captured log are read separately
 * (getJobWorkflow, getJobLogs): most reads need neither and they can be large.
 * Nothing from `extra_data` and no credential is ever stored.
 */
export interface JobRecord {
  /** UUID (v7 recommended), chosen by the caller. */
  id: string;
  /** Account or key scope; "" for anonymous callers. */
  owner: string;
  deployment_id: string | null;
  status: JobStatus;
  /** Assigned by the store at insert, strictly increasing: FIFO order of the queue. */
  seq: number;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  expires_at: number;
  /** Latest Progress snapshot. */
  progress: JobProgress | null;
  /** JobError of a failed job. */
  error: JobFailure | null;
  output_node_ids: string[];
  /** Credits charged, for the cloud surface; null when not charged. */
  cost: number | null;
  /** The labels it was submitted with ({} when none); fixed at creation. */
  metadata: JobLabels;
  /** The ComfyUI workflow id it was submitted with (`extra_data.extra_pnginfo.workflow.id`), the only part of extra_data kept; null when none. */
  workflow_id: string | null;
  /**
   * When its status last changed (creation, start, a cancel request, its end); a job stored before
   * this was recorded reads the latest of created_at, started_at and completed_at. Progress
   * snapshots and output commits do not move it (the outputs carry their own times).
   */
  updated_at: number;
}

/** A job's labels: key to value, both strings (bounds are the contract's, checked above the store). */
export type JobLabels = Record<string, string>;

/** What createJob needs; status defaults to "queued", the other nullable fields to null. */
export interface NewJob {
  id: string;
  owner: string;
  deployment_id?: string | null;
  status?: JobStatus;
  created_at: number;
  expires_at: number;
  /** The graph as submitted (API format). */
  workflow: JsonObject;
  output_node_ids: string[];
  /** The submission carried secrets (extra_data), which are never stored; only this flag is. */
  secrets_given?: boolean;
  /** Labels stored with the job and usable as listing filters; none when absent. */
  metadata?: JobLabels;
  /** The ComfyUI workflow id of the submission (a string of at most MAX_WORKFLOW_ID_LENGTH); none when absent. */
  workflow_id?: string | null;
  progress?: JobProgress | null;
  error?: JobFailure | null;
  cost?: number | null;
}

/** The captured standard output of a serverless run. */
export interface JobLogs {
  text: string;
  truncated: boolean;
  captured_at: number;
}

/** Fields a transition may set alongside the status; an absent field is left unchanged, null clears it. */
export interface JobPatch {
  /** When the move happened, for updated_at; absent: completed_at, else started_at of the patch, else the store's clock. */
  updated_at?: number;
  started_at?: number | null;
  completed_at?: number | null;
  progress?: JobProgress | null;
  error?: JobFailure | null;
  cost?: number | null;
}

/** Idempotency handling of createJob. */
export interface IdempotencyOptions {
  key: string;
  /** Injected clock (epoch ms): a claim whose expires_at <= now is dead and replaced. */
  now: number;
  /** Lifetime of a new claim; default IDEMPOTENCY_TTL_MS. */
  ttlMs?: number;
  /**
   * The caller took the claim earlier with claimIdempotencyKey (and has not yet bound it to a
   * job): bind that claim instead of refusing it as a reuse.
   */
  held?: boolean;
}

/** Options of createJob. */
export interface CreateJobOptions {
  idempotency?: IdempotencyOptions;
  /**
   * Refuse with QueueFullError, inserting nothing, when this many jobs are queued as the insert
   * commits. A store several processes share (PostgreSQL) counts in the insert's transaction,
   * exact across them; the SQLite store has one owning process, whose own count is exact, and
   * ignores it.
   */
  queueLimit?: number;
  /**
   * Called with the job once its insert has committed (this process reads it from now on), which
   * may be a moment before it is durable: work may start on it at once. The returned promise
   * still resolves only once the job is durable, and only that is ever acknowledged.
   */
  onCommitted?: (job: JobRecord) => void;
}

/** Options of Store.transitionJob. */
/**
 * Whose run a write belongs to: a fenced write lands only while its job is live (running or
 * canceling) and, with leases (`workerId` set), still held under the claim that started the run;
 * otherwise it changes nothing and throws LeaseLostError (a transition returns null instead).
 */
export interface RunFence {
  /** The worker whose claim the run holds (jobs.worker_id); null without leases (one process). */
  workerId: string | null;
  /** The claim's epoch (jobs.lease_epoch), distinct for every claim of the job. */
  epoch: number;
}

/**
 * Notifications a write sends in its own transaction, before those its change makes (PostgreSQL's
 * NOTIFY: a run's events ride on its writes instead of costing transactions of their own). A store
 * without listeners (SQLite) ignores them.
 */
export interface Notifications {
  channel: string;
  payloads: readonly string[];
  /** Sent after `payloads` only when the write changes its row (a run's final progress, with its end). */
  ifMoved?: readonly string[];
  /** Called once `payloads` have committed: a caller whose later step fails must not send them again. */
  sent?: () => void;
}

export interface TransitionOptions {
  /** Moves the job only while `fence` holds. */
  fence?: RunFence;
  /** Sent in the move's transaction (even when nothing moves), before its own status notification. */
  notify?: Notifications;
  /**
   * Called once the move has committed (with the job) or was refused (null), which may be a
   * moment before it is durable: a write that only needs the row moved (the job's end after its
   * start) may commit at once, and the fsync that makes it durable covers both.
   */
  onCommitted?: (job: JobRecord | null) => void;
}

/** A claimed idempotency key. */
export interface IdempotencyClaim {
  owner: string;
  key: string;
  /** The job created under the key; null while the claim's submission is in flight. */
  job_id: string | null;
  claimed_at: number;
  expires_at: number;
}

/** Filters and paging of listJobs. */
export interface ListJobsOptions {
  status?: JobStatus | readonly JobStatus[];
  deployment_id?: string;
  /** Page size, 1..1000. */
  limit: number;
  /** next_cursor of the previous page. */
  cursor?: string | null;
  /** Only jobs still in the hosted history (not taken out by hideFromHistory). */
  in_history?: boolean;
  /** Only jobs carrying every one of these labels (at most MAX_LABEL_FILTERS). */
  metadata?: JobLabels;
}

/** Filters, order and offset paging of listJobsAtOffset (the hosted job list, as ComfyUI pages it). */
export interface OffsetJobsOptions {
  /** Only jobs in one of these statuses; absent: any status. */
  status?: readonly JobStatus[];
  deployment_id?: string;
  /** Only jobs submitted with this ComfyUI workflow id. */
  workflow_id?: string;
  /** Clock (epoch ms): a finished job past its expires_at is left out, as GET leaves it out before the reaper purges it. */
  now: number;
  /** `created`: submission order; `duration`: completed_at - started_at (0 for a job without both). Ties keep submission order. */
  sort: "created" | "duration";
  descending: boolean;
  /** Page size, 1..1000. */
  limit: number;
  /** Jobs skipped, from 0. */
  offset: number;
}

/** One page of listJobsAtOffset and how many jobs match in all. */
export interface OffsetJobPage {
  jobs: JobRecord[];
  total: number;
}

/** The longest ComfyUI workflow id kept (the hosted filter's own bound): a longer one could never be asked for. */
export const MAX_WORKFLOW_ID_LENGTH = 256;

/** How many label filters one listing may combine. */
export const MAX_LABEL_FILTERS = 3;

/** Most counters of an output name series one allotOutputNames call takes. */
export const MAX_OUTPUT_NAMES_ALLOTTED = 1024;

/** One page of listJobs, newest first; next_cursor is null on the last page. */
export interface JobPage {
  jobs: JobRecord[];
  next_cursor: string | null;
}

/** Output types of the contract; uploads carry null. */
export type AssetType = (typeof OUTPUT_TYPES)[number];

/** ComfyUI's folder of a file: final output, preview, or uploaded input. */
export type AssetFolder = (typeof HOSTED_FILE_TYPES)[number];

/** A UUID-identified record over a content-addressed blob. */
export interface AssetRecord {
  id: string;
  owner: string;
  /** The producing job, for outputs; null for uploads. */
  job_id: string | null;
  node_id: string | null;
  /** File name as shown to the caller (ComfyUI's filename). */
  name: string;
  type: AssetType | null;
  content_type: string;
  size_bytes: number;
  /** `blake3:<hex>`; null while not yet computed. */
  hash: string | null;
  /** blake3 hex of the bytes: the blob's name in the blob store. */
  blob_key: string;
  folder: AssetFolder;
  /** The caller's own path hint (file_path of an upload). */
  file_path: string | null;
  tags: string[];
  created_at: number;
  /** Outputs expire with their job; uploads when the caller's retention says. */
  expires_at: number | null;
}

/**
 * What addAsset needs. For an output (job_id set) an omitted expires_at is taken from the
 * job, so the record dies with it.
 */
export type NewAsset = Omit<AssetRecord, "job_id" | "node_id" | "type" | "hash" | "file_path" | "tags" | "expires_at"> & {
  job_id?: string | null;
  node_id?: string | null;
  type?: AssetType | null;
  hash?: string | null;
  file_path?: string | null;
  tags?: string[];
  expires_at?: number | null;
  /**
   * The blob's bytes, when the store is their lasting home (a small output on PostgreSQL): written
   * in the record's own statement, so that the record never points at nothing and no file is
   * written (inlineBlob reads them). Their blake3 hex must be blob_key, and their length size_bytes.
   */
  inline?: Uint8Array | null;
};

/** The record a store writes for `asset`: its optional fields at their defaults. */
export function assetRecordOf(asset: NewAsset): AssetRecord {
  return {
    id: asset.id,
    owner: asset.owner,
    job_id: asset.job_id ?? null,
    node_id: asset.node_id ?? null,
    name: asset.name,
    type: asset.type ?? null,
    content_type: asset.content_type,
    size_bytes: asset.size_bytes,
    hash: asset.hash ?? null,
    blob_key: asset.blob_key,
    folder: asset.folder,
    file_path: asset.file_path ?? null,
    tags: asset.tags ?? [],
    created_at: asset.created_at,
    expires_at: asset.expires_at ?? null,
  };
}

/** Result of deleteAsset: the blob it referred to, and whether any record still does. */
export interface AssetDeletion {
  blob_key: string;
  blob_unreferenced: boolean;
}

/**
 * The bytes of a blob whose file was not durable when the records over it committed (see
 * BlobStore.stage): kept by the store until the file is, and written back at the next start
 * should a power loss come first.
 */
export interface PendingBlob {
  /** The blob's key (blake3 hex). */
  key: string;
  bytes: Uint8Array;
}

/** A blob kept in the store as its lasting home (NewAsset.inline). */
export interface InlineBlob {
  bytes: Uint8Array;
  /** The newest write of a record over it (its created_at): see dropInlineBlob. */
  touched_at: number;
}

/** Kept blobs per pendingBlobs read by default (each up to 256 KiB). */
export const DEFAULT_PENDING_READ = 100;

/** Options of purgeExpired. */
export interface PurgeOptions {
  /** Keep things this long past their expires_at (default 0). */
  graceMs?: number;
  /** At most this many jobs and this many uploads per call (default 500); `more` says to call again. */
  limit?: number;
}

/** What purgeExpired removed. */
export interface PurgeResult {
  job_ids: string[];
  asset_ids: string[];
  /** Blob keys no record refers to any more: candidates for blob deletion. */
  unreferenced_blob_keys: string[];
  /** A limit was reached; more may be due. */
  more: boolean;
}

/** The persistence layer of flowgate. */
export interface Store {
  /**
   * Inserts a job, in one transaction with its idempotency claim when `idempotency` is given:
   * a live claim of (owner, key) throws IdempotencyKeyReused and inserts nothing; an expired
   * one is replaced. Returns the stored job with its seq.
   */
  createJob(job: NewJob, options?: CreateJobOptions): Promise<JobRecord>;
  /** Takes a claim on (owner, key) without a job yet; IdempotencyKeyReused when a live claim exists. */
  claimIdempotencyKey(owner: string, key: string, now: number, ttlMs?: number): Promise<IdempotencyClaim>;
  /** Drops a claim no job was created under (a definitive failure); false when absent or bound to a job. */
  releaseIdempotencyKey(owner: string, key: string): Promise<boolean>;
  /** The live claim of (owner, key) at `now`, or null. */
  getIdempotencyClaim(owner: string, key: string, now: number): Promise<IdempotencyClaim | null>;

  /** One job by id, or null. */
  getJob(id: string): Promise<JobRecord | null>;
  /** The graph a job was submitted with, or null when the job does not exist. */
  getJobWorkflow(id: string): Promise<JsonObject | null>;
  /** A job's captured log, or null when none was captured (or no such job). */
  getJobLogs(id: string): Promise<JobLogs | null>;
  /** An owner's jobs, newest first, paged by an opaque cursor (InvalidCursorError when malformed). */
  listJobs(owner: string, options: ListJobsOptions): Promise<JobPage>;
  /** An owner's jobs still in the hosted history (every live one, the finished ones not hidden), sorted, at an offset, with their count. */
  listJobsAtOffset(owner: string, options: OffsetJobsOptions): Promise<OffsetJobPage>;
  /**
   * Takes an owner's finished jobs out of the hosted interface's history (ComfyUI's POST /history):
   * the named ones, or all of them when `ids` is null. Live jobs and other owners' are left alone;
   * the jobs themselves stay readable until their expiry. Returns how many left history.
   */
  hideFromHistory(owner: string, ids: readonly string[] | null): Promise<number>;
  /** Whether a job was taken out of history (false for an unknown job). */
  hiddenFromHistory(id: string): Promise<boolean>;

  /**
   * Moves a job to `to` only if its status is one of `from`, applying `patch` in the same
   * update. Returns the updated job, or null when the job is absent or in another status.
   * TerminalStatusError when the move would alter a terminal job (refused by the database).
   */
  transitionJob(id: string, from: readonly JobStatus[], to: JobStatus, patch?: JobPatch, options?: TransitionOptions): Promise<JobRecord | null>;
  /**
   * transitionJob and addAsset of each record in one transaction (one durable commit): a run
   * ends with its last outputs at the cost of one write. All or nothing: no record is added
   * unless the job moves (null: absent or in another status; TerminalStatusError: terminal).
   * As for addAsset, each record's blob must be durable before the call, or be one of `pending`,
   * whose bytes the same commit keeps (until dropPendingBlobs). Records come back in the order given.
   */
  transitionJobWithAssets(
    id: string,
    from: readonly JobStatus[],
    to: JobStatus,
    patch: JobPatch,
    assets: readonly NewAsset[],
    pending?: readonly PendingBlob[],
    fence?: RunFence,
    notify?: Notifications,
  ): Promise<{ job: JobRecord; assets: AssetRecord[] } | null>;
  /**
   * Lets each batch of runs' ends that transitionJobWithAssets writes in one statement carry a
   * claim of the next jobs for the worker that ran them (ClaimRider; null: none from now on). False
   * when this store cannot (SQLite, whose process owns its queue).
   */
  carryClaims(rider: ClaimRider | null): boolean;
  /** Blobs kept by transitionJobWithAssets, in key order after `afterKey`, at most `limit` (default 100): the startup restore. */
  pendingBlobs(afterKey?: string, limit?: number): Promise<PendingBlob[]>;
  /** Forgets kept blobs whose files are durable now. Resolves at commit: one lost to a crash is only restored again, harmlessly. */
  dropPendingBlobs(keys: readonly string[]): Promise<void>;
  /**
   * Replaces the progress snapshot of a running or canceling job; false otherwise. Resolves once
   * reads see it, not once it is durable: a snapshot matters only while its run goes on (a crash
   * ends the run), and readers must see the current one, not one an fsync behind the events.
   */
  updateProgress(id: string, progress: JobProgress | null, fence?: RunFence, notify?: Notifications): Promise<boolean>;
  /** Stores (or clears) a job's captured log, whatever its status (unless fenced); false when the job is absent. */
  setLogs(id: string, logs: JobLogs | null, fence?: RunFence): Promise<boolean>;

  /** Queued jobs in FIFO (seq) order, after `afterSeq` (only `owner`'s when given); the startup rebuild, the hosted queue. */
  queuedJobs(limit?: number, afterSeq?: number, owner?: string): Promise<JobRecord[]>;
  /** Ids of queued jobs submitted with secrets (recovery fails them: the secrets were in memory only). */
  queuedJobsWithSecrets(): Promise<string[]>;
  /** How many jobs are queued. */
  countQueued(): Promise<number>;
  /** How many of `owner`'s jobs are live (queued, running or canceling), read in one snapshot. */
  countLive(owner: string): Promise<number>;
  /** Every job in one of the statuses, in seq order (startup recovery of running/canceling jobs). */
  jobsInStatus(statuses: readonly JobStatus[]): Promise<JobRecord[]>;

  /** Records an asset; an output (job_id set) is visible in listJobOutputs at once. Fenced: only while the run holds its job. */
  addAsset(asset: NewAsset, fence?: RunFence): Promise<AssetRecord>;
  /** One asset by id, or null. */
  getAsset(id: string): Promise<AssetRecord | null>;
  /** A job's assets in commit order. */
  listJobOutputs(jobId: string): Promise<AssetRecord[]>;
  /** The assets of several jobs (at most 1,000 ids, a page) in one read: each id mapped to its assets in commit order ([] for none). */
  listOutputsOfJobs(jobIds: readonly string[]): Promise<Map<string, AssetRecord[]>>;
  /** Deletes an asset record; null when absent. */
  deleteAsset(id: string): Promise<AssetDeletion | null>;
  /** The owner's newest asset over the blob (proof it may use the blob), or null. */
  findAssetByBlob(owner: string, blobKey: string): Promise<AssetRecord | null>;
  /** The owner's newest asset with that file name (optionally in one folder), or null. */
  findAssetByName(owner: string, name: string, folder?: AssetFolder): Promise<AssetRecord | null>;
  /**
   * Takes `count` consecutive counters (1..MAX_OUTPUT_NAMES_ALLOTTED) of an output name series, the
   * owner's `<prefix>_<counter>_<ext>` names in `folder`, that no other call ever gets; a new
   * series starts past the counters of the owner's assets named in it. Returns the first.
   */
  allotOutputNames(owner: string, folder: AssetFolder, prefix: string, ext: string, count: number): Promise<number>;
  /** Whether any asset record refers to the blob. */
  blobReferenced(blobKey: string): Promise<boolean>;
  /** Of `keys`, those a record or a kept (pending) blob names: the orphan sweep keeps them. */
  blobsInUse(keys: readonly string[]): Promise<Set<string>>;
  /** The bytes a record carried into the store (NewAsset.inline), or null. */
  inlineBlob(key: string): Promise<InlineBlob | null>;
  /** Keys of inline blobs after `afterKey` in key order, at most `limit` (default 1,000): the orphan sweep. */
  inlineBlobKeys(afterKey?: string, limit?: number): Promise<string[]>;
  /**
   * Removes an inline blob no record names, unless a record's write touched it after
   * `unlessTouchedAfter` (one may be on its way); whether it was removed.
   */
  dropInlineBlob(key: string, unlessTouchedAfter: number): Promise<boolean>;
  /**
   * Whether the caller takes the turn of a periodic `task` shared by every process of the store:
   * true, with the turn recorded at `now`, when no turn of it was taken within `everyMs` before.
   */
  takeTurn(task: string, everyMs: number, now: number): Promise<boolean>;

  /**
   * Marks live jobs whose expires_at <= now as expired (completed_at = now), earliest expiry first,
   * at most `limit` (default 500) per call so that one call stays short; returns them in seq order.
   */
  expireJobs(now: number, limit?: number): Promise<JobRecord[]>;
  /**
   * Deletes terminal jobs past expires_at (+grace) with their assets, expired uploads and
   * expired idempotency claims; returns what went and the blob keys left unreferenced.
   */
  purgeExpired(now: number, options?: PurgeOptions): Promise<PurgeResult>;

  /**
   * Resolves when the store can read and durably write; rejects with the cause otherwise (for
   * readiness probes). A store whose durable writes failed stays failed until it is reopened.
   */
  check(): Promise<void>;

  /** Closes the store; no call may follow. */
  close(): Promise<void>;
}
