// The one place that turns failures into the v2 error envelope. Every layer (router,
// validation, auth, body limits, handlers) goes through here; nothing else writes error bodies.
import { isOutOfSpace } from "../datadir/space.ts";
import type { ErrorCode } from "../domain/errors.ts";
import { ServiceError } from "../domain/errors.ts";
import { isDependencyUnavailable } from "../domain/network-errors.ts";
import { ERROR_CODE_STATUS } from "../../generated/enums.ts";
import type { components } from "../../generated/openapi-types.ts";

/** Each code's only HTTP status (the contract's table, read from the spec). */
export const STATUS_OF: Readonly<Record<ErrorCode, number>> = ERROR_CODE_STATUS;

/** The fixed message of `upstream_error`: nothing of the cause reaches a client. */
export const UPSTREAM_MESSAGE = "Something went wrong on our side. Please try again.";

/** Seconds a client waits before retrying an answer caused by an unavailable dependency (database, storage). */
export const UNAVAILABLE_RETRY_AFTER_S = 5;

/** Retry-After of a 500 caused by a dependency that is unavailable now (an outage passes); null for any other failure. */
export function unavailableRetryAfter(err: unknown): string | null {
  return !(err instanceof ServiceError) && isDependencyUnavailable(err) ? String(UNAVAILABLE_RETRY_AFTER_S) : null;
}

/** An envelope response: status, body and headers. */
export interface EnvelopeResponse {
  status: number;
  headers: Record<string, string>;
  body: components["schemas"]["ErrorEnvelope"];
}

/** Maps any thrown value to the envelope; unknown failures become a generic `upstream_error`. */
export function toEnvelope(err: unknown): EnvelopeResponse {
  const e = asServiceError(err);
  const headers: Record<string, string> = {};
  const status = STATUS_OF[e.code];
  if (status === 429) headers["retry-after"] = String(Math.max(0, Math.ceil(e.retryAfter ?? 1)));
  const retry = status === 500 ? unavailableRetryAfter(err) : null;
  if (retry !== null) headers["retry-after"] = retry;
  const error: EnvelopeResponse["body"]["error"] = { code: e.code, message: e.message };
  if (e.details) error.details = e.details;
  if (status === 416 && e.details && typeof e.details.size === "number") headers["content-range"] = `bytes */${e.details.size}`;
  return { status, headers, body: { error } };
}

/** An error of Fastify or one of its plugins (codes `FST_*`), which describes the request. */
export function isFrameworkError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" && code.startsWith("FST_");
}

/** `insufficient_storage`: a write failed, or was refused, because the storage is full. */
export function insufficientStorage(): ServiceError {
  return new ServiceError("insufficient_storage", "The server is out of storage space; retry later.");
}

function asServiceError(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  if (isOutOfSpace(err)) return insufficientStorage();
  // Any other failure is ours, whatever status it carries.
  if (!isFrameworkError(err)) return new ServiceError("upstream_error", UPSTREAM_MESSAGE);
  const fastifyCode = (err as { code?: unknown })?.code;
  const statusCode = (err as { statusCode?: unknown })?.statusCode;
  // A second file is a malformed upload, not a large one.
  if (fastifyCode === "FST_FILES_LIMIT") return invalidRequest([{ field: "file", reason: "too_many_files" }]);
  if (fastifyCode === "FST_ERR_CTP_BODY_TOO_LARGE" || statusCode === 413) {
    return new ServiceError("payload_too_large", "The request body is too large.");
  }
  if (typeof statusCode === "number" && statusCode >= 400 && statusCode < 500) {
    // Framework-level client errors: malformed bodies, bad content types, multipart limits.
    if (fastifyCode === "FST_REQ_FILE_TOO_LARGE" || fastifyCode === "FST_PARTS_LIMIT") {
      return new ServiceError("payload_too_large", "The request body is too large.");
    }
    return new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field: "", reason: "malformed_request" }] });
  }
  return new ServiceError("upstream_error", UPSTREAM_MESSAGE);
}

/** `invalid_request` listing the offending fields. */
export function invalidRequest(fields: Array<components["schemas"]["FieldError"]>): ServiceError {
  return new ServiceError("invalid_request", "The request is invalid.", { fields });
}

/**
 * A failure while reading a multipart body: our own errors pass through, the framework's keep
 * their meaning, and a parser's complaint (a truncated or malformed body) is `invalid_request`.
 */
export function malformedMultipart(err: unknown): unknown {
  if (err instanceof ServiceError || isFrameworkError(err) || isOutOfSpace(err)) return err;
  return new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field: "", reason: "malformed_multipart" }] });
}

/** A body whose Content-Type the operation does not take: 400 `invalid_request` (unsupported_content_type). */
export function unsupportedContentType(): ServiceError {
  return invalidRequest([{ field: "", reason: "unsupported_content_type" }]);
}

/** A body that is not JSON: 400 `invalid_request` (malformed_json). */
export function malformedJson(): ServiceError {
  return invalidRequest([{ field: "", reason: "malformed_json" }]);
}
