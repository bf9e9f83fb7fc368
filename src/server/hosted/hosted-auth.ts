// Authentication of the hosted interface: `X-API-Key` on REST, `token` on the WebSocket.
import { timingSafeEqual } from "node:crypto";
import { ServiceError } from "../../jobs/errors.ts";
import type { Caller } from "../../jobs/job-service.ts";

/** The caller of a hosted request; open when no token is configured. */
export function authenticateHosted(key: string | undefined, token: string | null): Caller {
  if (token === null) return { owner: "" };
  if (!key || !sameSecret(key, token)) throw new ServiceError("unauthorized", "Invalid or missing API key.");
  return { owner: "" };
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
