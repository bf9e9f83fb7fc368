// Failures the lifecycle reports to callers, by contract error code. The HTTP layer maps each
// code to its one status (src/server/error-envelope.ts); nothing here knows about HTTP.

/** Every error code of the v2 contract (spec/openapi.yaml ErrorCode). */
export type ErrorCode =
  | "invalid_request"
  | "unauthorized"
  | "insufficient_credits"
  | "forbidden"
  | "not_found"
  | "blob_not_found"
  | "hash_mismatch"
  | "payload_too_large"
  | "range_not_satisfiable"
  | "invalid_workflow"
  | "workflow_format_ui"
  | "missing_asset"
  | "idempotency_key_reuse"
  | "deployment_stopped"
  | "queue_full"
  | "deployment_not_ready"
  | "too_many_streams"
  | "rate_limited"
  | "upstream_error"
  | "insufficient_storage";

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
