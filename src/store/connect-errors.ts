// A failed first connection to PostgreSQL, in words an operator can act on: which
// service, at which host and port, and why (never the URL's password).
import { hostAndPort, networkReason } from "../domain/network-errors.ts";

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
