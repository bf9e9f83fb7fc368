// Authentication of the self-hosted surface: open by default, or one static bearer token.
import { timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { ServiceError } from "../jobs/errors.ts";
import type { Caller } from "../jobs/job-service.ts";

/** The bearer token of an Authorization header, or null. */
export function bearerToken(request: FastifyRequest): string | null {
  const h = request.headers.authorization;
  if (typeof h !== "string") return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1]! : null;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The caller of a v2 request. With no token configured every request is the single local
 * owner ""; with a token, a missing or wrong bearer is 401 `unauthorized`.
 */
export function authenticateV2(request: FastifyRequest, token: string | null): Caller {
  if (token === null) return { owner: "" };
  const given = bearerToken(request);
  if (given === null || !sameSecret(given, token)) throw new ServiceError("unauthorized", "Missing or invalid credentials.");
  return { owner: "" };
}
