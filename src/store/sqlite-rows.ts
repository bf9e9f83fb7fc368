// Row <-> record conversion for the SQLite store: JSON lives in TEXT columns, booleans in INTEGER.
import type { AssetFolder, AssetRecord, AssetType, IdempotencyClaim, JobFailure, JobLogs, JobProgress, JobRecord, JobStatus } from "./types.ts";

type Row = Record<string, unknown>;

/** A job row (the default column set) as a JobRecord. */
export function toJob(row: Row): JobRecord {
  return {
    id: row.id as string,
    owner: row.owner as string,
    deployment_id: row.deployment_id as string | null,
    status: row.status as JobStatus,
    seq: row.seq as number,
    created_at: row.created_at as number,
    started_at: row.started_at as number | null,
    completed_at: row.completed_at as number | null,
    expires_at: row.expires_at as number,
    progress: parseNullable(row.progress) as JobProgress | null,
    error: parseNullable(row.error) as JobFailure | null,
    output_node_ids: JSON.parse(row.output_node_ids as string) as string[],
    cost: row.cost as number | null,
    metadata: row.metadata == null ? {} : (JSON.parse(row.metadata as string) as Record<string, string>),
  };
}

/** The three log columns as JobLogs, or null when no log was captured. */
export function toLogs(row: Row): JobLogs | null {
  if (row.logs_captured_at === null) return null;
  return {
    text: row.logs_text as string,
    truncated: row.logs_truncated === 1,
    captured_at: row.logs_captured_at as number,
  };
}

/** An asset row as an AssetRecord. */
export function toAsset(row: Row): AssetRecord {
  return {
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
    tags: JSON.parse(row.tags as string) as string[],
    created_at: row.created_at as number,
    expires_at: row.expires_at as number | null,
  };
}

/** An idempotency_keys row as a claim. */
export function toClaim(row: Row): IdempotencyClaim {
  return {
    owner: row.owner as string,
    key: row.key as string,
    job_id: row.job_id as string | null,
    claimed_at: row.claimed_at as number,
    expires_at: row.expires_at as number,
  };
}

/** JSON text for a nullable object column. */
export function jsonOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

function parseNullable(text: unknown): unknown {
  return text === null ? null : JSON.parse(text as string);
}
