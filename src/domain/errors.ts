// Failures the lifecycle reports to callers, by contract error code. The HTTP layer maps each
// code to its one status (src/server/error-envelope.ts); nothing here knows about HTTP.

import type { ERROR_CODES } from "../../generated/enums.ts";
import type { components } from "../../generated/openapi-types.ts";

/** Every error code of the v2 contract (spec/openapi.yaml ErrorCode). */
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * An error's `details`: the fields the spec names (ErrorEnvelope's `node_errors`, `fields`, `key`)
 * with their types, and more where a code carries more (the spec's details object is open).
 */
export type ErrorDetails = NonNullable<components["schemas"]["ErrorEnvelope"]["error"]["details"]> & Record<string, unknown>;

/** A failure with a contract code, a safe message, optional details and a back-off hint. */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails | null;
  /** Seconds to wait before retrying (for 429s). */
  readonly retryAfter: number | null;

  constructor(code: ErrorCode, message: string, details: ErrorDetails | null = null, retryAfter: number | null = null) {
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
