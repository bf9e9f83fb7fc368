// The one HTTP path of the v2 client: credentials, a user agent, and retries by policy.
// 429 is always retried after its Retry-After (the contract releases an idempotency key on
// 429, so even a submission may be repeated); 500 `upstream_error` and network failures only
// on requests that are safe to repeat, because a repeated submission could run twice.
import { VERSION } from "../domain/version.ts";
import { parseRetryAfter } from "./errors.ts";
import { backoffDelay, isNetworkError, realSleep, type Sleep } from "./retry.ts";

/** How hard the client retries; every count is a bound. */
export interface RetryOptions {
  /** 429 answers retried after their Retry-After (default 10). */
  rateLimitRetries?: number;
  /** 500 `upstream_error` answers retried on requests safe to repeat (default 3). */
  upstreamRetries?: number;
  /** Network failures retried on requests safe to repeat (default 3). */
  networkRetries?: number;
  /** First backoff delay in ms, doubled per retry (default 250). */
  baseDelayMs?: number;
  /** Longest backoff delay in ms (default 5000). */
  maxDelayMs?: number;
}

/** `idempotent`: GET, HEAD, cancel. `rate-limit-only`: submissions and uploads. `none`: the caller retries. */
export type RetryPolicy = "idempotent" | "rate-limit-only" | "none";

export interface TransportOptions {
  token?: string | undefined;
  fetch?: (request: Request) => Promise<Response>;
  sleep?: Sleep;
  retry?: RetryOptions;
}

/** The User-Agent of every request: the client and its package's version. */
export const USER_AGENT = `flowgate-client/${VERSION}`;

/** Sends requests with credentials and retries; answers are returned whatever their status. */
export class Transport {
  readonly token: string | undefined;
  readonly sleep: Sleep;
  readonly retry: Required<RetryOptions>;
  private readonly fetchImpl: (request: Request) => Promise<Response>;

  constructor(options: TransportOptions = {}) {
    this.token = options.token || undefined;
    this.fetchImpl = options.fetch ?? ((request) => fetch(request));
    this.sleep = options.sleep ?? realSleep;
    this.retry = {
      rateLimitRetries: 10,
      upstreamRetries: 3,
      networkRetries: 3,
      baseDelayMs: 250,
      maxDelayMs: 5000,
      ...options.retry,
    };
  }

  /** Sends a request made fresh for every attempt (a body can be read only once). */
  async send(make: () => Request, policy: RetryPolicy, options: { auth?: boolean } = {}): Promise<Response> {
    let rateLimited = 0;
    let upstream = 0;
    let network = 0;
    for (;;) {
      const request = make();
      if (options.auth !== false && this.token && !request.headers.has("authorization")) {
        request.headers.set("authorization", `Bearer ${this.token}`);
      }
      if (!request.headers.has("user-agent")) request.headers.set("user-agent", USER_AGENT);
      let res: Response;
      try {
        res = await this.fetchImpl(request);
      } catch (err) {
        if (policy !== "idempotent" || !isNetworkError(err) || network >= this.retry.networkRetries || request.signal.aborted) throw err;
        await this.sleep(backoffDelay(network++, this.retry.baseDelayMs, this.retry.maxDelayMs), request.signal);
        continue;
      }
      if (res.status === 429 && policy !== "none" && rateLimited < this.retry.rateLimitRetries) {
        rateLimited++;
        // Every 429 of the contract carries Retry-After; one second when a proxy left it out.
        const seconds = parseRetryAfter(res.headers.get("retry-after")) ?? 1;
        await res.body?.cancel();
        await this.sleep(seconds * 1000, request.signal);
        continue;
      }
      if (policy === "idempotent" && upstream < this.retry.upstreamRetries && (await isTransientServerError(res))) {
        await res.body?.cancel();
        await this.sleep(backoffDelay(upstream++, this.retry.baseDelayMs, this.retry.maxDelayMs), request.signal);
        continue;
      }
      return res;
    }
  }
}

/** True for the contract's 500 `upstream_error` (read from a clone) and a gateway's 502, 503, 504. */
async function isTransientServerError(res: Response): Promise<boolean> {
  if (res.status === 502 || res.status === 503 || res.status === 504) return true;
  if (res.status !== 500) return false;
  try {
    const body = (await res.clone().json()) as { error?: { code?: unknown } };
    return body?.error?.code === "upstream_error";
  } catch {
    return false;
  }
}
