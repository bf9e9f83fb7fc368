// How the double shows its records: jobs (with the breakages that change them), outputs,
// asset records, and the plumbing every handler shares.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Asset, JobRec, State } from "./state.ts";

/** One request, after the mount prefix was stripped and the body was read. */
export interface Req {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  body: Buffer;
  origin: string;
  res: ServerResponse;
  raw: IncomingMessage;
}

/** A JSON answer (or an empty one when body is undefined). */
export function send(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? "" : JSON.stringify(body);
  res.writeHead(status, { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers });
  res.end(text);
}

/** A v2 error in the envelope. */
export function fail(res: ServerResponse, status: number, code: string, message: string, details?: unknown, headers: Record<string, string> = {}): void {
  send(res, status, { error: { code, message, ...(details === undefined ? {} : { details }) } }, headers);
}

/** A hosted error in ComfyUI's shape. */
export function hostedFail(res: ServerResponse, status: number, type: string, message: string, extra: Record<string, unknown> = {}, s?: State): void {
  if (s?.broken("hostedNotFoundAsInvalid") && status === 404) type = "invalid_request";
  send(res, status, { error: { type, message, details: "", extra_info: {} }, ...extra });
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const TERMINAL = new Set(["succeeded", "canceled", "failed", "expired"]);
/** How long after its end a finished job reads expired under expiredSoonAfterEnd. */
const LATE_CHANGE_MS = 2000;

/** The signed, absolute link to an asset's bytes. */
export function assetUrl(s: State, a: Asset, origin: string): { url: string; url_expires_at: string } {
  const expires = Math.floor(Date.now() / 1000) + 3600;
  return {
    url: `${origin}${s.o.prefix}/api/v2/assets/${a.id}/content?expires=${expires}&signature=${s.sign(a.id, expires)}`,
    url_expires_at: new Date((expires + (s.broken("urlExpiresAtLate") ? 86_400 : 0)) * 1000).toISOString(),
  };
}

/** An output as the job shows it. */
export function outputView(s: State, a: Asset, origin: string): Record<string, unknown> {
  return {
    node_id: a.nodeId,
    name: a.name,
    type: a.type,
    content_type: s.broken("contentTypeNotBytes") && a.contentType === "image/png" ? "image/webp" : a.contentType,
    size_bytes: a.bytes.byteLength + (s.broken("outputSizeMismatch") ? 1 : 0),
    id: a.id,
    hash: a.hash,
    ...assetUrl(s, a, origin),
    ...(s.broken("noUrlExpiresAt") ? { url_expires_at: undefined } : {}),
    job_id: a.jobId,
  };
}

/** An output expires with its job; an upload a retention after it was made. */
function assetExpiry(s: State, a: Asset): Date {
  const job = a.jobId ? s.jobs.get(a.jobId) : undefined;
  // Broken, an hour apart: a retention after the output was made is its job's expiry when both
  // were made in the same millisecond, and the breakage would not show.
  if (job) return s.broken("outputExpiresApart") ? new Date(job.expiresAt.getTime() + 3_600_000) : job.expiresAt;
  return new Date(a.createdAt.getTime() + 7 * 86_400_000);
}

/** An asset record. */
export function assetView(s: State, a: Asset, origin: string): Record<string, unknown> {
  const contentType =
    s.broken("assetRecordTypeDiffers") && a.jobId
      ? "application/octet-stream"
      : s.broken("contentTypeNotBytes") && a.contentType === "image/png"
        ? "image/webp"
        : a.contentType;
  return {
    id: a.id,
    hash: a.hash,
    size_bytes: a.bytes.byteLength,
    content_type: contentType,
    file_path: a.name,
    created_at: a.createdAt.toISOString(),
    ...assetUrl(s, a, origin),
    job_id: a.jobId,
    expires_at: iso(assetExpiry(s, a)),
    tags: [],
  };
}

/** Whether the double serves logs: serverless, not the demo deployment. */
export function servesLogs(s: State): boolean {
  return s.o.surface === "serverless" && !s.o.demo;
}

/** Whether a job has a log to show (GET embeds it; the logs resource answers 200). */
export function showsLog(s: State, job: JobRec): boolean {
  return servesLogs(s) && TERMINAL.has(job.status);
}

/** A job's log as JobLogs: complete, since only a finished job's log is shown. */
export function logsView(job: JobRec): Record<string, unknown> {
  return { text: job.log, truncated: job.logTruncated, captured_at: iso(job.logAt ?? new Date()), complete: true };
}

/** The serverless deployment of the double: the last segment of its mount prefix. */
function deploymentOf(s: State): string {
  return s.o.prefix.split("/").filter(Boolean).pop() ?? "default";
}

/** The latest of a job's recorded moments: creation, start, end, output commits. */
function lastChange(job: JobRec): Date {
  const times = [job.createdAt, job.startedAt, job.completedAt, ...job.outputs.map((a) => a.createdAt)].filter((d): d is Date => d !== null);
  return new Date(Math.max(...times.map((d) => d.getTime())));
}

/** The job's progress as answers show it. */
export function progressView(s: State, job: JobRec): Record<string, unknown> | null {
  if (!job.progress) return null;
  return s.broken("progressOutOfRange") ? { ...job.progress, value: job.progress.value * 100 } : { ...job.progress };
}

/** A job as an answer shows it; `on` says which answer (logs appear only on GET). */
export function jobView(
  s: State,
  job: JobRec,
  origin: string,
  on: "post" | "get" | "list" | "cancel" | "event" | "terminal-event" | "other",
): Record<string, unknown> {
  const prefix = s.broken("unprefixedLinks") || (on === "list" && s.broken("listUnprefixed")) ? "" : s.o.prefix;
  const get = on === "get";
  const ended = TERMINAL.has(job.status);
  if (get && ended) job.readsSinceEnd++;
  let outputs = job.outputs;
  if ((get && ended && job.readsSinceEnd >= 2 && s.broken("outputsDropOnReread")) || (on === "terminal-event" && s.broken("sseTerminalSubset")))
    outputs = outputs.slice(0, -1);
  if (!ended && s.broken("outputsAtEnd")) outputs = [];
  const base = `${prefix}/api/v2/jobs/${job.id}`;
  const logsLink = servesLogs(s) && !s.broken("logsLinkMissing") ? { logs: `${base}/logs` } : {};
  const status =
    s.broken("statusOutsideEnum") && job.status === "running"
      ? "processing"
      : s.broken("terminalOutsideEnum") && job.status === "succeeded"
        ? "completed"
        : get && s.broken("cancelingReadsRunning") && job.status === "canceling"
          ? "running"
          : s.broken("expiredSoonAfterEnd") && job.completedAt && Date.now() - job.completedAt.getTime() >= LATE_CHANGE_MS
            ? "expired"
            : job.status;
  const view: Record<string, unknown> = {
    id: job.id,
    status,
    created_at: iso(get && s.broken("createdAtOnGet") ? new Date(job.createdAt.getTime() - 1) : job.createdAt),
    started_at: iso(job.startedAt),
    completed_at: iso(job.completedAt),
    expires_at: iso(job.expiresAt),
    queue_position:
      (s.broken("queuePositionWhileRunning") && job.status === "running") || (s.broken("queuePositionConstant") && job.status === "queued")
        ? 0
        : s.queuePosition(job),
    progress: get && job.status === "running" && job.streams > 0 && s.broken("getHidesProgressWhileStreamed") ? null : progressView(s, job),
    outputs: outputs.map((a) => outputView(s, a, origin)),
    error: s.broken("errorOnSucceeded") && job.status === "succeeded" ? { code: "none", message: "no error" } : job.error,
    urls: { self: s.broken("brokenSelfLink") ? `${base}/self` : base, events: `${base}/events`, cancel: `${base}/cancel`, ...logsLink },
    metrics: {
      queue_ms: job.startedAt ? job.startedAt.getTime() - job.createdAt.getTime() : null,
      execution_ms:
        job.startedAt && job.completedAt
          ? Math.round(
              ((get && s.broken("terminalMetricsDrift") ? Date.now() : job.completedAt.getTime()) - job.startedAt.getTime()) /
                (s.broken("metricsInSeconds") ? 1000 : 1),
            )
          : null,
    },
    metadata: { ...job.metadata },
  };
  if (on === "cancel" && s.broken("labelsDroppedOnCancel")) view.metadata = {};
  else if ((on === "event" || on === "terminal-event") && s.broken("labelsMissingOnSse")) delete view.metadata;
  if (on === "list") {
    view.create_time = view.created_at;
    if (!s.broken("listItemsWithoutUpdateTime")) view.update_time = iso(lastChange(job));
    view.deployment_id = s.o.surface === "serverless" ? deploymentOf(s) : null;
  }
  const logs = logsView(job);
  if (on === "get" && servesLogs(s) && TERMINAL.has(job.status)) view.logs = logs;
  else if (on === "get" && s.broken("nullLogs")) view.logs = null;
  if (on === "post" && s.broken("logsOnPost")) view.logs = logs;
  if (s.broken("omitField")) delete view.completed_at;
  return view;
}
