// The Store both databases are used through: every argument is checked here, once, before the
// dialect (SQLite or PostgreSQL) runs any SQL; a bad one rejects with a TypeError or RangeError
// (InvalidCursorError for a malformed cursor), whichever database is behind.
import { decodeCursor, encodeCursor } from "./cursor.ts";
import {
  checkBlobKey,
  checkClaimInput,
  checkCount,
  checkTime,
  checkNewAsset,
  checkNewJob,
  checkPendingBlob,
  checkStatus,
  distinctStatuses,
  isStorableWorkflowId,
  labelFilters,
} from "./input-checks.ts";
import type { ClaimRider } from "./job-leases.ts";
import type { StoreDialect } from "./store-dialect.ts";
import { DEFAULT_PENDING_READ, IDEMPOTENCY_TTL_MS, MAX_LABEL_FILTERS, MAX_OUTPUT_NAMES_ALLOTTED } from "./types.ts";
import type {
  AssetDeletion,
  AssetFolder,
  AssetRecord,
  CreateJobOptions,
  IdempotencyClaim,
  IdempotencyOptions,
  JobLogs,
  JobPage,
  JobPatch,
  JobProgress,
  JobRecord,
  JobStatus,
  JsonObject,
  ListJobsOptions,
  OffsetJobPage,
  OffsetJobsOptions,
  NewAsset,
  NewJob,
  InlineBlob,
  PendingBlob,
  PurgeOptions,
  PurgeResult,
  RunFence,
  Store,
  Notifications,
  TransitionOptions,
} from "./types.ts";

/** Page size of listJobs at most. */
const MAX_PAGE = 1000;
/** Rows of one queue, pending-blob or reaper read at most. */
const MAX_READ = 100_000;
/** Inline blob keys per inlineBlobKeys read by default. */
const DEFAULT_INLINE_KEYS_READ = 1_000;
const DEFAULT_QUEUE_READ = 1000;
const DEFAULT_PURGE_LIMIT = 500;

/** A Store that checks its arguments and hands them, normalized, to a dialect. */
export class CheckedStore implements Store {
  readonly #dialect: StoreDialect;

  constructor(dialect: StoreDialect) {
    this.#dialect = dialect;
  }

  async createJob(job: NewJob, options: CreateJobOptions = {}): Promise<JobRecord> {
    checkNewJob(job);
    if (options.idempotency !== undefined) checkIdempotency(job.owner, options.idempotency);
    if (options.queueLimit !== undefined) checkCount(options.queueLimit, Number.MAX_SAFE_INTEGER, "queueLimit");
    return this.#dialect.createJob(job, options);
  }

  async claimIdempotencyKey(owner: string, key: string, now: number, ttlMs?: number): Promise<IdempotencyClaim> {
    checkIdempotency(owner, ttlMs === undefined ? { key, now } : { key, now, ttlMs });
    return this.#dialect.claimIdempotencyKey(owner, key, now, ttlMs);
  }

  releaseIdempotencyKey(owner: string, key: string): Promise<boolean> {
    return this.#dialect.releaseIdempotencyKey(owner, key);
  }

  getIdempotencyClaim(owner: string, key: string, now: number): Promise<IdempotencyClaim | null> {
    return this.#dialect.getIdempotencyClaim(owner, key, now);
  }

  getJob(id: string): Promise<JobRecord | null> {
    return this.#dialect.getJob(id);
  }

  getJobWorkflow(id: string): Promise<JsonObject | null> {
    return this.#dialect.getJobWorkflow(id);
  }

  getJobLogs(id: string): Promise<JobLogs | null> {
    return this.#dialect.getJobLogs(id);
  }

  async listJobs(owner: string, options: ListJobsOptions): Promise<JobPage> {
    const limit = checkCount(options.limit, MAX_PAGE, "limit");
    const statuses = options.status === undefined ? null : distinctStatuses(typeof options.status === "string" ? [options.status] : options.status);
    if (statuses !== null && statuses.length === 0) return { jobs: [], next_cursor: null };
    const before = options.cursor == null ? Number.MAX_SAFE_INTEGER : decodeCursor(options.cursor);
    const labels = labelFilters(options.metadata, MAX_LABEL_FILTERS);
    const rows = await this.#dialect.listJobs(owner, {
      fetch: limit + 1,
      before,
      statuses,
      labels,
      deployment_id: options.deployment_id,
      in_history: options.in_history === true,
    });
    const jobs = rows.slice(0, limit);
    return { jobs, next_cursor: rows.length > limit ? encodeCursor(jobs[jobs.length - 1]!.seq) : null };
  }

  async listJobsAtOffset(owner: string, options: OffsetJobsOptions): Promise<OffsetJobPage> {
    const limit = checkCount(options.limit, MAX_PAGE, "limit");
    if (!Number.isSafeInteger(options.offset) || options.offset < 0) throw new RangeError("offset must be a non-negative integer");
    checkTime(options.now, "now");
    if (options.sort !== "created" && options.sort !== "duration") throw new RangeError("sort must be created or duration");
    const statuses = options.status === undefined ? undefined : distinctStatuses(options.status);
    if (statuses !== undefined && statuses.length === 0) return { jobs: [], total: 0 };
    // An id no job can have been stored with (too long, a NUL) matches none.
    if (options.workflow_id !== undefined && !isStorableWorkflowId(options.workflow_id)) return { jobs: [], total: 0 };
    return this.#dialect.listJobsAtOffset(owner, {
      ...options,
      limit,
      descending: options.descending === true,
      ...(statuses === undefined ? {} : { status: statuses }),
    });
  }

  async hideFromHistory(owner: string, ids: readonly string[] | null): Promise<number> {
    return this.#dialect.hideFromHistory(owner, ids === null ? null : [...new Set(ids)]);
  }

  hiddenFromHistory(id: string): Promise<boolean> {
    return this.#dialect.hiddenFromHistory(id);
  }

  async transitionJob(id: string, from: readonly JobStatus[], to: JobStatus, patch: JobPatch = {}, options: TransitionOptions = {}): Promise<JobRecord | null> {
    const fromStatuses = distinctStatuses(from);
    checkStatus(to);
    if (patch.updated_at !== undefined) checkTime(patch.updated_at, "updated_at");
    if (fromStatuses.length === 0) return null;
    return this.#dialect.transitionJob(id, fromStatuses, to, patch, options);
  }

  async transitionJobWithAssets(
    id: string,
    from: readonly JobStatus[],
    to: JobStatus,
    patch: JobPatch,
    assets: readonly NewAsset[],
    pending: readonly PendingBlob[] = [],
    fence?: RunFence,
    notify?: Notifications,
  ): Promise<{ job: JobRecord; assets: AssetRecord[] } | null> {
    const fromStatuses = distinctStatuses(from);
    checkStatus(to);
    if (patch.updated_at !== undefined) checkTime(patch.updated_at, "updated_at");
    assets.forEach(checkNewAsset);
    pending.forEach(checkPendingBlob);
    if (fromStatuses.length === 0) return null;
    return this.#dialect.transitionJobWithAssets(id, fromStatuses, to, patch, assets, pending, fence, notify);
  }

  carryClaims(rider: ClaimRider | null): boolean {
    return this.#dialect.carryClaims(rider);
  }

  async pendingBlobs(afterKey = "", limit = DEFAULT_PENDING_READ): Promise<PendingBlob[]> {
    return this.#dialect.pendingBlobs(afterKey, checkCount(limit, MAX_READ, "limit"));
  }

  dropPendingBlobs(keys: readonly string[]): Promise<void> {
    return this.#dialect.dropPendingBlobs(keys);
  }

  updateProgress(id: string, progress: JobProgress | null, fence?: RunFence, notify?: Notifications): Promise<boolean> {
    return this.#dialect.updateProgress(id, progress, fence, notify);
  }

  setLogs(id: string, logs: JobLogs | null, fence?: RunFence): Promise<boolean> {
    return this.#dialect.setLogs(id, logs, fence);
  }

  async queuedJobs(limit = DEFAULT_QUEUE_READ, afterSeq = 0, owner?: string): Promise<JobRecord[]> {
    return this.#dialect.queuedJobs(checkCount(limit, MAX_READ, "limit"), afterSeq, owner);
  }

  queuedJobsWithSecrets(): Promise<string[]> {
    return this.#dialect.queuedJobsWithSecrets();
  }

  countQueued(): Promise<number> {
    return this.#dialect.countQueued();
  }

  countLive(owner: string): Promise<number> {
    return this.#dialect.countLive(owner);
  }

  async jobsInStatus(statuses: readonly JobStatus[]): Promise<JobRecord[]> {
    const distinct = distinctStatuses(statuses);
    return distinct.length === 0 ? [] : this.#dialect.jobsInStatus(distinct);
  }

  async addAsset(asset: NewAsset, fence?: RunFence): Promise<AssetRecord> {
    checkNewAsset(asset);
    return this.#dialect.addAsset(asset, fence);
  }

  getAsset(id: string): Promise<AssetRecord | null> {
    return this.#dialect.getAsset(id);
  }

  listJobOutputs(jobId: string): Promise<AssetRecord[]> {
    return this.#dialect.listJobOutputs(jobId);
  }

  async listOutputsOfJobs(jobIds: readonly string[]): Promise<Map<string, AssetRecord[]>> {
    if (!Array.isArray(jobIds) || !jobIds.every((id) => typeof id === "string")) throw new TypeError("job ids must be an array of strings");
    const ids = [...new Set(jobIds)];
    if (ids.length > MAX_PAGE) throw new RangeError(`at most ${MAX_PAGE} job ids`);
    if (ids.length === 0) return new Map();
    const byJob = new Map<string, AssetRecord[]>(ids.map((id) => [id, []]));
    // Rows come in (job, commit) order: each job's list keeps it.
    for (const asset of await this.#dialect.listOutputsOfJobs(ids)) byJob.get(asset.job_id!)?.push(asset);
    return byJob;
  }

  deleteAsset(id: string): Promise<AssetDeletion | null> {
    return this.#dialect.deleteAsset(id);
  }

  findAssetByBlob(owner: string, blobKey: string): Promise<AssetRecord | null> {
    return this.#dialect.findAssetByBlob(owner, blobKey);
  }

  findAssetByName(owner: string, name: string, folder?: AssetFolder): Promise<AssetRecord | null> {
    return this.#dialect.findAssetByName(owner, name, folder);
  }

  allotOutputNames(owner: string, folder: AssetFolder, prefix: string, ext: string, count: number): Promise<number> {
    if (!Number.isSafeInteger(count) || count < 1 || count > MAX_OUTPUT_NAMES_ALLOTTED)
      throw new RangeError(`count must be an integer from 1 to ${MAX_OUTPUT_NAMES_ALLOTTED}`);
    return this.#dialect.allotOutputNames(owner, folder, prefix, ext, count);
  }

  blobReferenced(blobKey: string): Promise<boolean> {
    return this.#dialect.blobReferenced(blobKey);
  }

  blobsInUse(keys: readonly string[]): Promise<Set<string>> {
    return this.#dialect.blobsInUse(keys);
  }

  async inlineBlob(key: string): Promise<InlineBlob | null> {
    checkBlobKey(key);
    return this.#dialect.inlineBlob(key);
  }

  async inlineBlobKeys(afterKey = "", limit = DEFAULT_INLINE_KEYS_READ): Promise<string[]> {
    return this.#dialect.inlineBlobKeys(afterKey, checkCount(limit, MAX_READ, "limit"));
  }

  async dropInlineBlob(key: string, unlessTouchedAfter: number): Promise<boolean> {
    checkBlobKey(key);
    if (!Number.isSafeInteger(unlessTouchedAfter)) throw new RangeError("unlessTouchedAfter must be an integer");
    return this.#dialect.dropInlineBlob(key, unlessTouchedAfter);
  }

  takeTurn(task: string, everyMs: number, now: number): Promise<boolean> {
    if (typeof task !== "string" || task === "") throw new TypeError("task must be a non-empty string");
    if (!Number.isSafeInteger(everyMs) || everyMs < 0) throw new RangeError("everyMs must be a non-negative integer");
    if (!Number.isSafeInteger(now)) throw new RangeError("now must be an integer");
    return this.#dialect.takeTurn(task, everyMs, now);
  }

  async expireJobs(now: number, limit = DEFAULT_PURGE_LIMIT): Promise<JobRecord[]> {
    return this.#dialect.expireJobs(now, checkCount(limit, MAX_READ, "limit"));
  }

  async purgeExpired(now: number, options: PurgeOptions = {}): Promise<PurgeResult> {
    const graceMs = options.graceMs ?? 0;
    if (!Number.isSafeInteger(graceMs) || graceMs < 0) throw new RangeError("graceMs must be a non-negative integer");
    const limit = checkCount(options.limit ?? DEFAULT_PURGE_LIMIT, MAX_READ, "limit");
    return this.#dialect.purgeExpired(now, now - graceMs, limit);
  }

  check(): Promise<void> {
    return this.#dialect.check();
  }

  close(): Promise<void> {
    return this.#dialect.close();
  }
}

/** TypeError or RangeError for a malformed idempotency claim of `owner`. */
function checkIdempotency(owner: string, options: IdempotencyOptions): void {
  checkClaimInput(owner, options.key, options.now);
  const ttlMs = options.ttlMs ?? IDEMPOTENCY_TTL_MS;
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) throw new RangeError("ttlMs must be a positive integer");
}
