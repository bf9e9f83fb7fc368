// Row -> record conversion for both stores: the same fields from the same columns (sql-fragments.ts).
// Only the drivers differ: SQLite hands back a JSON column as text and a boolean as 0/1,
// node-postgres a json column parsed and a boolean as one. Each store takes its RowReader.
import { parseJson } from "../domain/exact-json.ts";
import type {
  AssetFolder,
  AssetRecord,
  AssetType,
  IdempotencyClaim,
  JobFailure,
  JobLogs,
  JobProgress,
  JobRecord,
  JobStatus,
  JsonObject,
  PendingBlob,
} from "./types.ts";

/** A row as the driver returns it. */
export type Row = Record<string, unknown>;

/** How a driver returns the columns whose representation differs between the databases. */
interface ColumnCodec {
  /** A non-null JSON column's value. */
  json(value: unknown): unknown;
  /** A non-null boolean column's value. */
  bool(value: unknown): boolean;
}

/** The record readers over one driver's rows. */
export interface RowReader {
  /** A job row (JOB_COLUMNS) as a JobRecord. */
  toJob(row: Row): JobRecord;
  /** The three log columns as JobLogs, or null when no log was captured. */
  toLogs(row: Row): JobLogs | null;
  /** An asset row (ASSET_COLUMNS) as an AssetRecord. */
  toAsset(row: Row): AssetRecord;
  /** An idempotency_keys row (CLAIM_COLUMNS) as a claim. */
  toClaim(row: Row): IdempotencyClaim;
}

function rowReader(codec: ColumnCodec): RowReader {
  const nullableJson = (value: unknown) => (value === null || value === undefined ? null : codec.json(value));
  return {
    toJob: (row) => ({
      id: row.id as string,
      owner: row.owner as string,
      deployment_id: row.deployment_id as string | null,
      status: row.status as JobStatus,
      seq: row.seq as number,
      created_at: row.created_at as number,
      started_at: row.started_at as number | null,
      completed_at: row.completed_at as number | null,
      expires_at: row.expires_at as number,
      progress: nullableJson(row.progress) as JobProgress | null,
      error: nullableJson(row.error) as JobFailure | null,
      output_node_ids: codec.json(row.output_node_ids) as string[],
      cost: row.cost as number | null,
      metadata: (nullableJson(row.metadata) as Record<string, string> | null) ?? {},
      workflow_id: (row.workflow_id as string | null | undefined) ?? null,
      // Null on a row written before the column existed: its last status change is its latest time.
      updated_at:
        (row.updated_at as number | null | undefined) ??
        Math.max(row.created_at as number, (row.started_at as number | null) ?? 0, (row.completed_at as number | null) ?? 0),
    }),
    toLogs: (row) =>
      row.logs_captured_at === null
        ? null
        : { text: row.logs_text as string, truncated: codec.bool(row.logs_truncated), captured_at: row.logs_captured_at as number },
    toAsset: (row) => ({
      id: row.id as string,
      owner: row.owner as string,
      job_id: row.job_id as string | null,
      node_id: row.node_id as string | null,
      name: row.name as string,
      type: row.type as AssetType | null,
      content_type: row.content_type as string,
      size_bytes: row.size_bytes as number,
      hash: row.hash as string | null,
      blob_key: row.blob_key as string,
      folder: row.folder as AssetFolder,
      file_path: row.file_path as string | null,
      tags: codec.json(row.tags) as string[],
      created_at: row.created_at as number,
      expires_at: row.expires_at as number | null,
    }),
    toClaim: (row) => ({
      owner: row.owner as string,
      key: row.key as string,
      job_id: row.job_id as string | null,
      claimed_at: row.claimed_at as number,
      expires_at: row.expires_at as number,
    }),
  };
}

/** SQLite's rows: JSON in TEXT columns, booleans in INTEGER 0/1. */
export const SQLITE_ROWS = rowReader({ json: (value) => JSON.parse(value as string), bool: (value) => value === 1 });

/** PostgreSQL's rows: json columns parsed by node-postgres, booleans as booleans. */
export const PG_ROWS = rowReader({ json: (value) => value, bool: (value) => value === true });

/** A workflow column read as text (both stores), parsed keeping its numbers exact. */
export function toWorkflow(row: Row): JsonObject {
  return parseJson(row.workflow as string) as JsonObject;
}

/** A pending_blobs row (blob_key, bytes). */
export function toPendingBlob(row: Row): PendingBlob {
  return { key: String(row.blob_key), bytes: row.bytes as Uint8Array };
}

/** JSON text for a nullable object column (both stores bind JSON as text). */
export function jsonOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
