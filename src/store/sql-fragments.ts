// The SQL pieces both stores' statements share, built from one source: the column lists from the
// record types' fields, the status lists from the contract's generated enums. The migrations do
// not use them (an applied migration keeps its literal text); test/store/schema-enums.test.ts
// holds the migrated schemas equal to them.
import { LIVE_STATUSES, TERMINAL_STATUSES } from "./types.ts";
import type { AssetRecord, IdempotencyClaim, JobRecord, JobStatus } from "./types.ts";

/**
 * A record's column names, checked against its type: a field added to the record fails to compile
 * ("Expected 2 arguments": the second names the missing field) until its column is listed.
 */
function columns<T>() {
  return <const L extends readonly (keyof T & string)[]>(
    names: L,
    ..._complete: [Exclude<keyof T, L[number]>] extends [never] ? [] : [missing: Exclude<keyof T, L[number]>]
  ): L => names;
}

/** The columns a job record is read from, in its read order (seq first). */
export const JOB_COLUMN_NAMES = columns<JobRecord>()([
  "seq",
  "id",
  "owner",
  "deployment_id",
  "status",
  "created_at",
  "started_at",
  "completed_at",
  "expires_at",
  "progress",
  "error",
  "output_node_ids",
  "cost",
  "metadata",
  "workflow_id",
  "updated_at",
]);

/** The columns of an asset record, in its insert order. */
export const ASSET_COLUMN_NAMES = columns<AssetRecord>()([
  "id",
  "owner",
  "job_id",
  "node_id",
  "name",
  "type",
  "content_type",
  "size_bytes",
  "hash",
  "blob_key",
  "folder",
  "file_path",
  "tags",
  "created_at",
  "expires_at",
]);

/** The columns of an idempotency claim. */
export const CLAIM_COLUMN_NAMES = columns<IdempotencyClaim>()(["owner", "key", "job_id", "claimed_at", "expires_at"]);

/** `seq, id, owner, ...`: a job's select list. */
export const JOB_COLUMNS = JOB_COLUMN_NAMES.join(", ");
/** An asset's select (and insert) list. */
export const ASSET_COLUMNS = ASSET_COLUMN_NAMES.join(", ");
/** A claim's select list. */
export const CLAIM_COLUMNS = CLAIM_COLUMN_NAMES.join(", ");

/** A job's select list with each column qualified by a table or alias (`jobs.seq, jobs.id, ...`). */
export function qualifiedJobColumns(table: string): string {
  return JOB_COLUMN_NAMES.map((name) => `${table}.${name}`).join(", ");
}

/** `('a', 'b')`: a parenthesized list of SQL string literals (the values hold no quote). */
export function sqlList(values: readonly string[]): string {
  if (values.length === 0 || values.some((value) => !/^[a-z_]+$/.test(value))) throw new RangeError(`not a list of plain words: ${values.join(", ")}`);
  return `(${values.map((value) => `'${value}'`).join(", ")})`;
}

/** Statuses of a job whose run holds it (a canceling job still runs until its run stops). */
export const RUN_STATUSES = ["running", "canceling"] as const satisfies readonly JobStatus[];

/** The terminal statuses (a job's outcome, never changed), as an SQL list. */
export const TERMINAL_SQL = sqlList(TERMINAL_STATUSES);
/** The statuses of a job not yet ended (queued, running, canceling), as an SQL list. */
export const LIVE_SQL = sqlList(LIVE_STATUSES);
/** RUN_STATUSES as an SQL list. */
export const RUN_SQL = sqlList(RUN_STATUSES);
