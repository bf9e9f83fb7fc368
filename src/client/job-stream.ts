// stream(): the job's events as an async iterator. The SSE stream is a live enhancement and never
// authoritative: before every (re)connect the job is re-read with GET (frames sent while we were
// away are lost), the stream's terminal status is confirmed with GET, and whenever the stream
// cannot be used the iterator polls GET until it can try again.
import type { SseLog, SsePreview } from "../../generated/asyncapi-types.ts";
import { FlowgateApiError } from "./errors.ts";
import { jobFingerprint, progressFingerprint } from "./job-changes.ts";
import { withResolvedLinks, withResolvedOutput } from "./links.ts";
import { ssePayload } from "./responses.ts";
import { backoffDelay, isNetworkError, withJitter, type Sleep } from "./retry.ts";
import { readSse } from "./sse.ts";
import { isTerminalStatus, type Job, type Output, type Progress } from "./types.ts";

/** Where an event came from: the SSE stream, or a GET made while resynchronizing or polling. */
export type EventSource = "stream" | "poll";

/** One event of a job: `status` (the whole job), `progress`, `preview` (JPEG, base64), `output`, `log`. */
export type JobEvent =
  | { event: "status"; data: Job; source: EventSource }
  | { event: "progress"; data: Progress; source: EventSource }
  | { event: "preview"; data: SsePreview; source: "stream" }
  | { event: "output"; data: Output; source: "stream" }
  | { event: "log"; data: SseLog; source: "stream" };

export interface StreamOptions {
  signal?: AbortSignal;
  /** Poll interval in ms while the stream is unavailable (default 500). */
  pollIntervalMs?: number;
  /** First delay before reconnecting in ms, doubled per failure, with jitter (default 1000). */
  reconnectDelayMs?: number;
  /** Longest delay before reconnecting in ms (default 30000). */
  maxReconnectDelayMs?: number;
  /** A stream silent this long (ms) is dropped and reopened; the server sends a keep-alive every 15 s (default 45000). */
  idleTimeoutMs?: number;
  /** Told when an event stream opens, and when it is lost before the terminal status (polling and reconnecting follow). */
  onConnection?: (state: "open" | "lost") => void;
}

/** What stream() needs of the client. */
export interface StreamDeps {
  get(signal: AbortSignal | undefined): Promise<Job>;
  /** Opens the events link; resolves with a 200 `text/event-stream` answer or throws. */
  openEvents(url: string, signal: AbortSignal): Promise<Response>;
  sleep: Sleep;
}

/** Errors after which reconnecting cannot help. */
function isFinal(err: unknown): boolean {
  return err instanceof FlowgateApiError && [400, 401, 402, 403, 404].includes(err.status);
}

/** The job's events until its terminal status (always the last event, read with GET). */
export async function* streamJob(deps: StreamDeps, options: StreamOptions = {}): AsyncGenerator<JobEvent> {
  const { signal } = options;
  const pollMs = options.pollIntervalMs ?? 500;
  const reconnectMs = options.reconnectDelayMs ?? 1000;
  const maxReconnectMs = options.maxReconnectDelayMs ?? 30_000;
  const idleMs = options.idleTimeoutMs ?? 45_000;
  let lastJob = "";
  let lastProgress = "";
  let failures = 0;

  // A status event when the job itself changed (progress has its own event); the terminal
  // status always comes last.
  function* changes(job: Job, source: EventSource): Generator<JobEvent> {
    const fingerprint = jobFingerprint(job, false);
    const terminal = isTerminalStatus(job.status);
    if (fingerprint !== lastJob && !terminal) {
      lastJob = fingerprint;
      yield { event: "status", data: job, source };
    }
    if (job.progress && progressFingerprint(job.progress) !== lastProgress) {
      lastProgress = progressFingerprint(job.progress);
      yield { event: "progress", data: job.progress, source };
    }
    if (terminal) yield { event: "status", data: job, source };
  }

  for (;;) {
    // Resynchronize from the authoritative view before every (re)connect.
    const job = await readJob(deps, signal);
    if (job) {
      yield* changes(job, "poll");
      if (isTerminalStatus(job.status)) return;
    }
    let waitMs: number;
    const idle = new AbortController();
    let idleTimer: NodeJS.Timeout | undefined;
    const touch = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => idle.abort(new Error("event stream idle")), idleMs);
    };
    try {
      if (!job) throw new Error("job not readable");
      touch();
      const res = await deps.openEvents(job.urls.events, signal ? AbortSignal.any([signal, idle.signal]) : idle.signal);
      options.onConnection?.("open");
      const origin = res.url || job.urls.events;
      for await (const message of readSse(res.body!, touch)) {
        failures = 0;
        const event = parseEvent(message.event ?? "message", message.data, origin);
        if (!event) continue;
        if (event.event === "status" && isTerminalStatus(event.data.status)) {
          // The stream is not authoritative: the terminal state comes from GET (with `logs`).
          const final = (await readJob(deps, signal, true))!;
          yield { event: "status", data: final, source: "poll" };
          return;
        }
        if (event.event === "status") yield* changes(event.data, "stream");
        else if (event.event === "progress") {
          if (progressFingerprint(event.data) === lastProgress) continue;
          lastProgress = progressFingerprint(event.data);
          yield event;
        } else yield event;
      }
      // Ended without a terminal status (restart, proxy timeout): reconnect.
      waitMs = withJitter(backoffDelay(failures++, reconnectMs, maxReconnectMs));
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      if (isFinal(err)) throw err;
      waitMs =
        err instanceof FlowgateApiError && err.retryAfter !== null ? err.retryAfter * 1000 : withJitter(backoffDelay(failures++, reconnectMs, maxReconnectMs));
    } finally {
      clearTimeout(idleTimer);
    }
    options.onConnection?.("lost");
    // Poll until the stream may be tried again, so progress keeps flowing without it.
    for (let polls = Math.max(1, Math.ceil(waitMs / pollMs)); polls > 0; polls--) {
      await deps.sleep(Math.min(pollMs, waitMs), signal);
      if (polls === 1) break; // the loop's top re-reads the job before reconnecting
      const polled = await readJob(deps, signal);
      if (!polled) continue;
      yield* changes(polled, "poll");
      if (isTerminalStatus(polled.status)) return;
    }
  }
}

/** GET the job; a network failure (or 429, 502-504) gives undefined (the caller retries), other errors surface. */
async function readJob(deps: StreamDeps, signal: AbortSignal | undefined, mustRead = false): Promise<Job | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await deps.get(signal);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      // A gateway's 502-504 (a server restarting behind a proxy) is "not now", like a network failure.
      const notNow = err instanceof FlowgateApiError && (err.status === 429 || (err.status >= 502 && err.status <= 504));
      if (!isNetworkError(err) && !notNow) throw err;
      if (!mustRead) return undefined;
      await deps.sleep(err instanceof FlowgateApiError ? (err.retryAfter ?? 1) * 1000 : backoffDelay(attempt, 250, 5000), signal);
    }
  }
}

/** Parses one SSE message; unknown event names are skipped (v2 may add events). */
function parseEvent(name: string, data: string, responseUrl: string): JobEvent | null {
  switch (name) {
    case "status": {
      const job = ssePayload("status", data);
      return job === null ? null : { event: "status", data: withResolvedLinks(job, responseUrl), source: "stream" };
    }
    case "progress": {
      const progress = ssePayload("progress", data);
      return progress === null ? null : { event: "progress", data: progress, source: "stream" };
    }
    case "preview": {
      const preview = ssePayload("preview", data);
      return preview === null ? null : { event: "preview", data: preview, source: "stream" };
    }
    case "output": {
      const output = ssePayload("output", data);
      return output === null ? null : { event: "output", data: withResolvedOutput(output, responseUrl), source: "stream" };
    }
    case "log": {
      const log = ssePayload("log", data);
      return log === null ? null : { event: "log", data: log, source: "stream" };
    }
    default:
      return null;
  }
}
