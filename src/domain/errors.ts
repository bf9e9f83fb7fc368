// Failures the lifecycle reports to callers, by contract error code. The HTTP layer maps each
// code to its one status (src/server/error-envelope.ts); nothing here knows about HTTP.

import { ERROR_CODES } from "../../generated/enums.ts";

/** Every error code of the v2 contract (spec/openapi.yaml ErrorCode). */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** A failure with a contract code, a safe message, optional details and a back-off hint. */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | null;
  /** Seconds to wait before retrying (for 429s). */
  readonly retryAfter: number | null;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> | null = null, retryAfter: number | null = null) {
    super(message);
    this.name = "ServiceError";
    this.code = code;
    this.details = details;
    this.retryAfter = retryAfter;
  }
}

/** 404 `not_found`, the same for a missing resource and another caller's. */
export function notFound(what = "Not found."): ServiceError {
  return new ServiceError("not_found", what);
}
