// wait(): polls GET (the authoritative view) with backoff until the job is terminal.
// Network failures never end the wait; 429 waits its Retry-After; a 500 `upstream_error` is
// retried by the transport a bounded number of times and then surfaces.
import { FlowgateApiError } from "./errors.ts";
import { jobFingerprint } from "./job-changes.ts";
import { backoffDelay, isNetworkError, type Sleep } from "./retry.ts";
import { isTerminalStatus, type Job } from "./types.ts";

export interface WaitOptions {
  signal?: AbortSignal;
  /** Called with the job each time its status, progress or outputs changed. */
  onProgress?: (job: Job) => void;
  /** First poll interval in ms (default 250); it grows while nothing changes. */
  pollIntervalMs?: number;
  /** Longest poll interval in ms (default 2000). */
  maxPollIntervalMs?: number;
}

/** What wait() needs of the client. */
export interface WaitDeps {
  get(signal: AbortSignal | undefined): Promise<Job>;
  sleep: Sleep;
}

/** Polls until a terminal status and returns that job (read with GET, so it carries `logs` where allowed). */
export async function waitForJob(deps: WaitDeps, options: WaitOptions = {}): Promise<Job> {
  const { signal, onProgress } = options;
  const base = options.pollIntervalMs ?? 250;
  const max = Math.max(base, options.maxPollIntervalMs ?? 2000);
  let delay = base;
  let seen = "";
  let failures = 0;
  for (;;) {
    signal?.throwIfAborted();
    let job: Job;
    try {
      job = await deps.get(signal);
      failures = 0;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      if (isNetworkError(err)) {
        await deps.sleep(backoffDelay(failures++, base, max), signal);
        continue;
      }
      if (err instanceof FlowgateApiError && err.status === 429) {
        await deps.sleep((err.retryAfter ?? 1) * 1000, signal);
        continue;
      }
      throw err;
    }
    const fingerprint = jobFingerprint(job);
    if (fingerprint !== seen) {
      seen = fingerprint;
      delay = base;
      onProgress?.(job);
    } else {
      delay = Math.min(max, Math.round(delay * 1.5));
    }
    if (isTerminalStatus(job.status)) return job;
    await deps.sleep(delay, signal);
  }
}
