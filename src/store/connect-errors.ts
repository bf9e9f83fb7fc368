// A failed first connection to PostgreSQL or Redis, in words an operator can act on: which
// service, at which host and port, and why (never the URL's password).

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

/** The error of a failed first connection to PostgreSQL at `url`, explained. */
export function postgresConnectError(err: unknown, url: string): Error {
  const where = hostAndPort(url, 5432);
  const network = networkReason(err);
  if (network) return new Error(`cannot reach PostgreSQL at ${where} (${network}); check --database-url`);
  // The server answered and refused: authentication (28xxx), an unknown database (3D000), too many clients (53300).
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "string" && /^(28|3D|53)/.test(code)) {
    return new Error(`PostgreSQL at ${where} refused the connection: ${(err as Error).message}; check --database-url`);
  }
  return err instanceof Error ? err : new Error(String(err));
}
