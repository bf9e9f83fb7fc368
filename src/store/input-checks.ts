// The argument checks CheckedStore applies in front of either database: a bad argument is a TypeError or
// RangeError before any SQL runs, whatever the database.
import { JOB_STATUSES, MAX_WORKFLOW_ID_LENGTH } from "./types.ts";
import type { JobPatch, JobRecord, JobStatus, NewAsset, NewJob, PendingBlob } from "./types.ts";

/** The record a job's insert writes, without reading the row back; its seq comes from the insert. */
export function insertedJob(job: NewJob): JobRecord {
  return {
    id: job.id,
    owner: job.owner,
    deployment_id: job.deployment_id ?? null,
    status: "queued",
    seq: 0,
    created_at: job.created_at,
    started_at: null,
    completed_at: null,
    expires_at: job.expires_at,
    progress: null,
    error: null,
    output_node_ids: [...job.output_node_ids],
    cost: job.cost ?? null,
    metadata: { ...(job.metadata ?? {}) },
    workflow_id: job.workflow_id ?? null,
    updated_at: job.created_at,
  };
}

/**
 * The time a transition writes to updated_at: the patch's own, else the end or start it sets, else
 * this process's clock (a move that sets no time, such as a cancel request). The store keeps the
 * column from going back, so a later move never reads as older.
 */
export function changedAt(patch: JobPatch): number {
  return patch.updated_at ?? patch.completed_at ?? patch.started_at ?? Date.now();
}

/** A blob to keep: a blake3 hex key and its bytes. */
export function checkPendingBlob(blob: PendingBlob): void {
  checkBlobKey(blob.key);
  if (!(blob.bytes instanceof Uint8Array)) throw new TypeError("a pending blob's bytes must be a Uint8Array");
}

/** TypeError unless `key` is a blob key (blake3 hex). */
export function checkBlobKey(key: string): void {
  if (typeof key !== "string" || !/^[0-9a-f]{64}$/.test(key)) throw new TypeError("a blob key must be lowercase blake3 hex");
}

/** The distinct statuses of a list, each checked. */
export function distinctStatuses(statuses: readonly JobStatus[]): JobStatus[] {
  const distinct = [...new Set(statuses)];
  distinct.forEach(checkStatus);
  return distinct;
}

/** TypeError for a status the contract does not know. */
export function checkStatus(status: JobStatus): void {
  if (!JOB_STATUSES.includes(status)) throw new TypeError(`unknown job status: ${String(status)}`);
}

/** RangeError unless `value` is an integer in 1..max. */
export function checkCount(value: number, max: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1 || value > max) throw new RangeError(`${name} must be an integer in 1..${max}`);
  return value;
}

/** TypeError unless `value` is an integer epoch in ms. */
export function checkTime(value: unknown, name: string): void {
  if (!Number.isSafeInteger(value)) throw new TypeError(`${name} must be an integer epoch in milliseconds`);
}

/** TypeError for a malformed job input. */
export function checkNewJob(job: NewJob): void {
  if (typeof job.id !== "string" || job.id === "") throw new TypeError("job id must be a non-empty string");
  if (typeof job.owner !== "string") throw new TypeError("job owner must be a string");
  checkTime(job.created_at, "created_at");
  checkTime(job.expires_at, "expires_at");
  if (!Array.isArray(job.output_node_ids) || !job.output_node_ids.every((n) => typeof n === "string")) {
    throw new TypeError("output_node_ids must be an array of strings");
  }
  if (typeof job.workflow !== "object" || job.workflow === null || Array.isArray(job.workflow)) {
    throw new TypeError("workflow must be a JSON object");
  }
  if (job.metadata !== undefined) checkLabels(job.metadata, "metadata");
  if (job.workflow_id != null && !isStorableWorkflowId(job.workflow_id)) {
    throw new TypeError(`workflow_id must be well-formed text of 1 to ${MAX_WORKFLOW_ID_LENGTH} characters without NUL`);
  }
}

/** Whether a ComfyUI workflow id can be kept: a non-empty string within MAX_WORKFLOW_ID_LENGTH, storable as given. */
export function isStorableWorkflowId(value: unknown): value is string {
  return typeof value === "string" && value !== "" && value.length <= MAX_WORKFLOW_ID_LENGTH && storable(value);
}

/**
 * TypeError unless `labels` is a plain map of strings to strings ({} allowed), each well-formed
 * Unicode without NUL: PostgreSQL keeps neither NUL nor a lone surrogate, and both stores must
 * answer alike.
 */
export function checkLabels(labels: unknown, what: string): void {
  if (typeof labels !== "object" || labels === null || Array.isArray(labels)) throw new TypeError(`${what} must be an object`);
  for (const [k, v] of Object.entries(labels)) {
    if (k === "" || typeof v !== "string") throw new TypeError(`${what} must map non-empty keys to strings`);
    if (!storable(k) || !storable(v)) throw new TypeError(`${what} must hold well-formed text without NUL`);
  }
}

/** Text both stores keep as given: well-formed Unicode without NUL. */
function storable(text: string): boolean {
  // In a `u` pattern a surrogate pair is one code point: the class matches only a lone half.
  return !/[\u0000\uD800-\uDFFF]/u.test(text);
}

/** Whether a job has at least one label. */
export function hasLabels(labels: Record<string, string> | undefined): labels is Record<string, string> {
  return labels !== undefined && Object.keys(labels).length > 0;
}

/** The label filters of a listing, checked: null when there are none. */
export function labelFilters(filters: Record<string, string> | undefined, max: number): Array<[string, string]> | null {
  if (filters === undefined) return null;
  checkLabels(filters, "metadata filter");
  const pairs = Object.entries(filters);
  if (pairs.length > max) throw new RangeError(`at most ${max} label filters`);
  return pairs.length === 0 ? null : pairs;
}

/** TypeError for a malformed asset input. */
export function checkNewAsset(asset: NewAsset): void {
  if (typeof asset.id !== "string" || asset.id === "") throw new TypeError("asset id must be a non-empty string");
  if (typeof asset.owner !== "string") throw new TypeError("asset owner must be a string");
  if (!/^[0-9a-f]{64}$/.test(asset.blob_key)) throw new TypeError("blob_key must be a lowercase 64-hex blake3 digest");
  if (!Number.isSafeInteger(asset.size_bytes) || asset.size_bytes < 0) throw new TypeError("size_bytes must be a non-negative integer");
  checkTime(asset.created_at, "created_at");
  if (asset.expires_at != null) checkTime(asset.expires_at, "expires_at");
  if (asset.inline != null) {
    if (!(asset.inline instanceof Uint8Array)) throw new TypeError("an asset's inline bytes must be a Uint8Array");
    if (asset.inline.byteLength !== asset.size_bytes) throw new TypeError("an asset's inline bytes must be size_bytes long");
  }
}

/** TypeError for a malformed idempotency claim. */
export function checkClaimInput(owner: string, key: string, now: number): void {
  if (typeof owner !== "string") throw new TypeError("owner must be a string");
  if (typeof key !== "string" || key === "") throw new TypeError("idempotency key must be a non-empty string");
  checkTime(now, "now");
}
