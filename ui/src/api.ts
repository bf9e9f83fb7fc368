// The dashboard's HTTP side: the bearer token (kept in the browser), JSON requests with the
// contract's error envelope, and job event streams read with fetch (EventSource cannot send an
// Authorization header). Streams are read and resumed by the TypeScript client's own code
// (src/client): one SSE reader, one reconnect policy.
import type { components } from "../../generated/openapi-types.ts";
import { FlowgateApiError, parseRetryAfter } from "../../src/client/errors.ts";
import { streamJob } from "../../src/client/job-stream.ts";
import { realSleep } from "../../src/client/retry.ts";
import { readSse } from "../../src/client/sse.ts";

export type Job = components["schemas"]["Job"];
export type Output = components["schemas"]["Output"];
export type Progress = components["schemas"]["Progress"];
export type JobStatus = components["schemas"]["JobStatus"];
export type Asset = components["schemas"]["Asset"];
/** One problem of one node, as `details.node_errors` lists them. */
export type NodeError = components["schemas"]["FieldError"];

export const TERMINAL: readonly JobStatus[] = ["succeeded", "canceled", "failed", "expired"];

const TOKEN_KEY = "flowgate.token";

/** The saved token: this tab's, else the remembered one. */
export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY) ?? localStorage.getItem(TOKEN_KEY);
}

/** Saves the token for this tab, and across visits when `remember`; null forgets it. */
export function setToken(token: string | null, remember = false): void {
  sessionStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(TOKEN_KEY);
  if (token) (remember ? localStorage : sessionStorage).setItem(TOKEN_KEY, token);
}

/** An error answer in the contract's envelope (the client's error, so its stream code knows which to give up on). */
export class ApiError extends FlowgateApiError {
  constructor(status: number, code: string, message: string, details: Record<string, unknown> | null, retryAfter: number | null = null) {
    super({ status, code, message, details, retryAfter });
  }
}

function authHeaders(): Record<string, string> {
  const token = getToken();
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** A JSON request; throws ApiError with the envelope's code on an error answer. */
export async function api<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: { ...authHeaders(), ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return answer<T>(res);
}

/** Uploads a file as an asset (POST /api/v2/assets, multipart: the describing fields before the file). */
export async function uploadAsset(file: File): Promise<Asset> {
  const form = new FormData();
  if (file.type) form.append("content_type", file.type);
  form.append("file_path", file.name);
  form.append("file", file, file.name);
  return answer<Asset>(await fetch("/api/v2/assets", { method: "POST", headers: authHeaders(), body: form }));
}

async function answer<T>(res: Response): Promise<T> {
  const text = await res.text();
  const json = text ? safeJson(text) : undefined;
  if (!res.ok) {
    const e = (json as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | undefined)?.error;
    throw new ApiError(
      res.status,
      e?.code ?? "http_error",
      e?.message ?? `HTTP ${res.status}`,
      e?.details ?? null,
      parseRetryAfter(res.headers.get("retry-after")),
    );
  }
  return json as T;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A link of the API as a path or URL the page can fetch (links may be host-relative). */
export function resolveLink(link: string): string {
  return new URL(link, window.location.origin).toString();
}

/** One event of a job's stream. */
export type JobEvent =
  | { event: "status"; data: Job }
  | { event: "progress"; data: Progress }
  | { event: "preview"; data: { node_id: string; content_type: string; data_base64: string } }
  | { event: "output"; data: Output }
  | { event: "log"; data: { text: string } };

/** Opens a job's event stream; throws ApiError when it is refused. */
async function openEvents(eventsUrl: string, signal: AbortSignal): Promise<Response> {
  const res = await fetch(resolveLink(eventsUrl), { headers: { ...authHeaders(), accept: "text/event-stream" }, signal });
  if (res.ok && res.body) return res;
  await res.body?.cancel();
  throw new ApiError(res.status, "stream_refused", `The event stream answered ${res.status}`, null, parseRetryAfter(res.headers.get("retry-after")));
}

/**
 * Follows one connection of a job's event stream until it ends or `signal` aborts; calls
 * `onEvent` for each event. Resolves when the stream closes (after the terminal status, or when
 * the connection drops): for views that read the job again anyway, such as the jobs list.
 */
export async function followJob(eventsUrl: string, onEvent: (e: JobEvent) => void, signal: AbortSignal): Promise<void> {
  const res = await openEvents(eventsUrl, signal);
  try {
    for await (const message of readSse(res.body!)) {
      const data = safeJson(message.data);
      if (data !== undefined) onEvent({ event: message.event ?? "message", data } as JobEvent);
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  }
}

/**
 * Follows job `id` until it is terminal or `signal` aborts: a dropped stream is reopened with
 * backoff and jitter, and meanwhile the job is read with GET (the stream has no resume cursor,
 * so the job is re-read before every reconnect). The last event is the terminal status, read
 * with GET (with `logs`). `onConnection` hears when a stream opens and when one is lost.
 */
export async function followJobToEnd(
  id: string,
  onEvent: (e: JobEvent) => void,
  onConnection: (state: "open" | "lost") => void,
  signal: AbortSignal,
): Promise<void> {
  const events = streamJob(
    {
      get: () => api<Job>("GET", `/api/v2/jobs/${encodeURIComponent(id)}`),
      openEvents,
      sleep: realSleep,
    },
    { signal, onConnection, maxReconnectDelayMs: 10_000 },
  );
  try {
    for await (const e of events) {
      if (signal.aborted) return; // the page moved on while a GET was under way
      onEvent(e);
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  }
}
