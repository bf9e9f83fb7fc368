// Credentials as they arrive over HTTP; who they belong to is the surface policy's business.
import type { FastifyRequest } from "fastify";

/** The bearer token of an Authorization header, or null. */
export function bearerToken(request: FastifyRequest): string | null {
  const h = request.headers.authorization;
  if (typeof h !== "string") return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1]! : null;
}
