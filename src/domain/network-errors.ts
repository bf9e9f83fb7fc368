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
