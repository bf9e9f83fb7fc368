// How a request's 5xx is logged. An outage of a dependency (the database, object storage) fails
// every request that needs it: its start is logged once, without a stack, and the requests it
// failed are counted and logged once it has been quiet for a while, instead of a stack per
// request. Any other failure is logged with its stack, as the unexpected event it is.
import type { FastifyBaseLogger } from "fastify";
import { isDependencyUnavailable } from "../domain/network-errors.ts";

/** Quiet time after which an outage counts as over (its failures are then summed up in one line). */
const OUTAGE_QUIET_MS = 10_000;

/** The logger of the server's 5xx answers. */
export class FailureLog {
  #failed = 0;
  #quiet: NodeJS.Timeout | undefined;
  #log: FastifyBaseLogger | undefined;

  /** Logs the failure behind a 5xx answer. */
  note(log: FastifyBaseLogger, err: unknown): void {
    const e = err as Error | undefined;
    if (!isDependencyUnavailable(err)) {
      log.error({ err: { type: e?.name, message: e?.message, stack: e?.stack } }, "unexpected failure");
      return;
    }
    if (this.#failed++ === 0)
      log.error({ err: { type: e?.name, message: e?.message } }, "a dependency is unavailable: requests that need it answer 500 with Retry-After");
    this.#log = log;
    clearTimeout(this.#quiet);
    this.#quiet = setTimeout(() => this.#end(), OUTAGE_QUIET_MS);
    this.#quiet.unref();
  }

  /** Sums up the outage that went quiet. */
  #end(): void {
    this.#log?.warn(
      { failed_requests: this.#failed },
      `no request failed for an unavailable dependency in ${OUTAGE_QUIET_MS / 1000} s; ${this.#failed} failed before`,
    );
    this.#failed = 0;
    this.#log = undefined;
  }
}

const logs = new WeakMap<object, FailureLog>();

/** The failure log of one server (keyed by its runtime: every route of the server shares it). */
export function failureLogOf(server: object): FailureLog {
  let log = logs.get(server);
  if (!log) logs.set(server, (log = new FailureLog()));
  return log;
}
