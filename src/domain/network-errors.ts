// Why a connection to a service failed, in words an operator can act on: where (never the
// URL's credentials) and why. Shared by PostgreSQL, Redis and object storage.

/** `host:port` of a connection URL (the service's default port when none is given); never its credentials. */
export function hostAndPort(url: string, defaultPort: number): string {
  if (!URL.canParse(url)) return "the configured URL";
  const u = new URL(url);
  const host = decodeURIComponent(u.hostname) || "localhost";
  return `${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${u.port || defaultPort}`;
}

/** Why a socket could not be opened, from Node's error code; null for other errors. */
export function networkReason(err: unknown): string | null {
  const e = err as { code?: unknown; message?: unknown; errors?: unknown[] } | null;
  const code = typeof e?.code === "string" ? e.code : undefined;
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused: nothing listens there";
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
      return "no such host";
    case "ETIMEDOUT":
    case "ENETUNREACH":
    case "EHOSTUNREACH":
      return "the host does not answer";
    case "ECONNRESET":
    case "EPIPE":
      return "the connection was closed at once";
  }
  // Both address families refused (localhost): an AggregateError of one reason per address.
  if (Array.isArray(e?.errors) && e.errors.length > 0) return networkReason(e.errors[0]);
  if (typeof e?.message === "string" && /timeout/i.test(e.message)) return "the host does not answer";
  return null;
}

/** A dependency (database, object storage) that did not answer: the failure passes once it is back. */
export class DependencyUnavailableError extends Error {
  override readonly name: string = "DependencyUnavailableError";
}

/** PostgreSQL states of a server that is down, starting, stopping or full of connections. */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300)$/;
/** The words of a driver whose connection broke or never opened. */
const UNAVAILABLE_MESSAGE =
  /connection terminated|terminating connection|timeout exceeded when trying to connect|connection (is )?closed|server closed the connection|the database system is (starting up|shutting down|in recovery mode)/i;

/**
 * Whether a failure comes from a dependency that is unreachable or unavailable now (a refused or
 * broken connection, a timeout, a database shutting down, a bucket answering 5xx), rather than
 * from the request: retrying later may succeed. Looks through `cause`.
 */
export function isDependencyUnavailable(err: unknown, depth = 0): boolean {
  if (err === null || typeof err !== "object" || depth > 4) return false;
  if (err instanceof DependencyUnavailableError || networkReason(err) !== null) return true;
  const e = err as { code?: unknown; message?: unknown; name?: unknown; $metadata?: { httpStatusCode?: unknown }; cause?: unknown };
  if (typeof e.code === "string" && UNAVAILABLE_SQLSTATE.test(e.code)) return true;
  if (typeof e.message === "string" && UNAVAILABLE_MESSAGE.test(e.message)) return true;
  if (e.name === "TimeoutError" || e.name === "RequestTimeout") return true;
  const status = e.$metadata?.httpStatusCode;
  if (typeof status === "number" && status >= 500) return true;
  return isDependencyUnavailable(e.cause, depth + 1);
}
