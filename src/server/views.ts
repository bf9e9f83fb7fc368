// Contract representations of jobs and assets: RFC 3339 times, follow-up links carrying the
// mount prefix, and signed, expiring output URLs.
import type { components } from "../../generated/openapi-types.ts";
import type { UrlSigner } from "../blobs/index.ts";
import type { JobSnapshot } from "../jobs/job-service.ts";
import type { AssetRecord, JobLogs, JobRecord } from "../store/index.ts";
import { WORKFLOW_FAILED } from "../domain/failures.ts";

type Schemas = components["schemas"];

/** Where a response is served: links are built from this. */
export interface LinkContext {
  /** Prefix the v2 interface is mounted under on this request, e.g. "" or "/deployment/abc". */
  mount: string;
  /** Absolute origin (and optional base path) for signed links, e.g. "http://127.0.0.1:8189". */
  origin: string;
  signer: UrlSigner;
  /** When a link signed now expires (asked at signing time: an event stream lives for hours). */
  expiresAt(): number;
  /** Whether this caller is served logs, so that jobs link `urls.logs` (serverless, not the demo deployment). */
  logs: boolean;
}

/** What a rendered job depends on besides the job: answers with equal keys are byte-identical. */
export function linkKey(ctx: LinkContext): string {
  return `${ctx.mount}|${ctx.origin}|${ctx.logs ? "logs" : ""}`;
}

/**
 * When links signed at `now` expire: `now + ttlMs` rounded up to a step of a sixtieth of the TTL
 * (1 s to 60 s). Links signed within one step are byte-identical, so clients and caches can
 * keep them, and a rendered answer stays valid for the whole step.
 */
export function linkExpiry(now: number, ttlMs: number): number {
  const step = Math.min(60_000, Math.max(1000, Math.floor(ttlMs / 60_000) * 1000));
  return Math.ceil((now + ttlMs) / step) * step;
}

/** RFC 3339 in UTC with a `Z` suffix. */
export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** The signed, absolute link to an asset's bytes, and when it expires. */
export function signedContentUrl(assetId: string, ctx: LinkContext): { url: string; expires_at: number } {
  // Signed over the unprefixed path, so a link works through any mount of the same server.
  const path = `/api/v2/assets/${assetId}/content`;
  const signed = ctx.signer.sign(path, ctx.expiresAt());
  return { url: `${ctx.origin}${ctx.mount}${path}?${signed.query}`, expires_at: signed.expires_at };
}

/** An output of a job, as the contract's Output. */
export function outputView(asset: AssetRecord, ctx: LinkContext): Schemas["Output"] {
  const link = signedContentUrl(asset.id, ctx);
  return {
    node_id: asset.node_id ?? "",
    name: asset.name,
    type: asset.type ?? "file",
    content_type: asset.content_type,
    size_bytes: asset.size_bytes,
    id: asset.id,
    hash: asset.hash,
    url: link.url,
    url_expires_at: iso(link.expires_at),
    job_id: asset.job_id,
  };
}

/** An asset record, as the contract's Asset; `createdNew` only on the answers of upload and from-hash. */
export function assetView(asset: AssetRecord, ctx: LinkContext, options: { createdNew?: boolean } = {}): Schemas["Asset"] {
  const link = signedContentUrl(asset.id, ctx);
  return {
    id: asset.id,
    hash: asset.hash,
    size_bytes: asset.size_bytes,
    content_type: asset.content_type,
    file_path: asset.file_path,
    created_at: iso(asset.created_at),
    url: link.url,
    url_expires_at: iso(link.expires_at),
    job_id: asset.job_id,
    ...(options.createdNew === undefined ? {} : { created_new: options.createdNew }),
    expires_at: iso(asset.expires_at),
    tags: asset.tags,
  };
}

/** Host-relative follow-up links of a job, with the mount prefix; `logs` only where the caller is served logs. */
export function jobUrls(job: Pick<JobRecord, "id">, mount: string, logs = false): Schemas["JobUrls"] {
  const self = `${mount}/api/v2/jobs/${job.id}`;
  return { self, events: `${self}/events`, cancel: `${self}/cancel`, ...(logs ? { logs: `${self}/logs` } : {}) };
}

/** A job as the contract's JobWithoutLogs: submission, cancellation, listing, the `status` event. */
export function jobView(s: JobSnapshot, ctx: LinkContext): Schemas["JobWithoutLogs"] {
  const { job } = s;
  return {
    id: job.id,
    status: job.status,
    created_at: iso(job.created_at),
    started_at: iso(job.started_at),
    completed_at: iso(job.completed_at),
    expires_at: iso(job.expires_at),
    queue_position: job.status === "queued" ? s.queue_position : null,
    progress: job.progress ?? null,
    outputs: s.outputs.map((o) => outputView(o, ctx)),
    error: job.status === "failed" ? contractError(job.error) : null,
    urls: jobUrls(job, ctx.mount, ctx.logs),
    metadata: { ...job.metadata },
    metrics: {
      queue_ms: job.started_at === null ? null : job.started_at - job.created_at,
      execution_ms: job.started_at === null || job.completed_at === null ? null : job.completed_at - job.started_at,
    },
  };
}

/** A listed job: the job view plus the official SDK's item fields. */
export function jobListItemView(s: JobSnapshot, ctx: LinkContext): Schemas["JobListItem"] {
  const { job } = s;
  // The last status change, or a later output commit (outputs carry their own times).
  let updated = job.updated_at;
  for (const o of s.outputs) updated = Math.max(updated, o.created_at);
  return { ...jobView(s, ctx), create_time: iso(job.created_at), update_time: iso(updated), deployment_id: job.deployment_id };
}

/** A job as the contract's Job, the answer of `GET /api/v2/jobs/{id}`: with `logs` when captured. */
export function jobWithLogsView(s: JobSnapshot, ctx: LinkContext): Schemas["Job"] {
  const view: Schemas["Job"] = jobView(s, ctx);
  if (s.logs) view.logs = logsView(s.logs);
  return view;
}

/** A finished job's log as the contract's JobLogs: only a finished job's log is served, so it is complete. */
export function logsView(logs: JobLogs): Schemas["JobLogs"] {
  return { text: logs.text, truncated: logs.truncated, captured_at: iso(logs.captured_at), complete: true };
}

/** A failed job's error as the contract's JobError: ComfyUI's own fields (`comfy`) are the hosted interface's only. */
function contractError(error: JobRecord["error"]): NonNullable<JobRecord["error"]> {
  if (!error) return { ...WORKFLOW_FAILED };
  if (!("comfy" in error)) return error;
  const { comfy: _comfy, ...rest } = error;
  return rest;
}
