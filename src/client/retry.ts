// Waiting and backing off: an injectable sleep (tests record delays instead of waiting them)
// and the tell-tale of a network failure.

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** The real timer-based sleep. */
export const realSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** Exponential backoff: base * 2^attempt, capped. */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt));
}

/** `ms` with "equal jitter": half of it fixed, half random, so that many clients cut off at once do not retry in step. */
export function withJitter(ms: number, random: () => number = Math.random): number {
  return Math.round(ms / 2 + (ms / 2) * random());
}

/** True for a failure to reach the server (refused, reset, DNS, TLS), as opposed to an HTTP answer. */
export function isNetworkError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === "AbortError") return false;
  // fetch (undici) reports every transport failure as TypeError("fetch failed") with a cause;
  // body reads cut mid-stream surface as "terminated" or socket errors.
  if (err instanceof TypeError) return true;
  const code = (err as { code?: unknown }).code ?? (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^(E[A-Z_]+|UND_ERR_[A-Z_]+)$/.test(code);
}
