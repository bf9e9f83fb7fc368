// Errors of the hosted interface, in ComfyUI's shape `{error: {type, message, details,
// extra_info}, node_errors?}`, with the statuses of the seed's hosted table (the spec's
// `x-hosted-error-types`).
import { HOSTED_ERROR_TYPE_STATUS } from "../../../generated/enums.ts";
import type { components } from "../../../generated/openapi-types.ts";
import { ServiceError } from "../../domain/errors.ts";
import { isOutOfSpace } from "../../datadir/space.ts";
import type { ComfyValidationError } from "../../engine/index.ts";
import { insufficientStorage, unavailableRetryAfter, UPSTREAM_MESSAGE } from "../error-envelope.ts";

/** The hosted error body (the spec's HostedError), with the fields flowgate always sends. */
export type HostedErrorBody = components["schemas"]["HostedError"] & { error: { details: string; extra_info: Record<string, unknown> } };

/** A hosted error response. */
export interface HostedErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: HostedErrorBody;
}

/**
 * The hosted status of each error type; a v2 code missing here is a generic 500. On this
 * interface a 429 means an inactive subscription, and a full queue is a 503.
 */
const STATUS: Partial<Record<string, number>> = HOSTED_ERROR_TYPE_STATUS;

/** An invalid prompt on this interface, with ComfyUI's own 400 body of it (null: none to give). */
export class InvalidPromptError extends ServiceError {
  readonly comfy: ComfyValidationError | null;

  constructor(invalid: ServiceError, comfy: ComfyValidationError | null) {
    super("invalid_workflow", invalid.message, invalid.details);
    this.comfy = comfy;
  }
}

/** When a caller with an inactive subscription may check again (the contract's 429 carries Retry-After). */
const INACTIVE_RETRY_AFTER_SECONDS = 60;

/** Maps any failure to the hosted shape; unknown failures are a generic 500. */
export function toHostedError(err: unknown): HostedErrorResponse {
  if (isOutOfSpace(err)) err = insufficientStorage();
  if (!(err instanceof ServiceError) || STATUS[err.code] === undefined) {
    const statusCode = (err as { statusCode?: unknown })?.statusCode;
    if ((err as { code?: unknown })?.code === "FST_FILES_LIMIT") return plain(400, "invalid_request", "Upload one file per request.");
    if (typeof statusCode === "number" && statusCode === 413) return plain(413, "payload_too_large", "The request body is too large.");
    if (typeof statusCode === "number" && statusCode >= 400 && statusCode < 500) return plain(400, "invalid_request", "The request is invalid.");
    const r = plain(500, "internal_error", UPSTREAM_MESSAGE);
    const retry = unavailableRetryAfter(err);
    if (retry !== null) r.headers["retry-after"] = retry;
    return r;
  }
  // On this interface an inactive subscription is a 429, as the seed's table says.
  if (err.details?.inactive_subscription) {
    const r = plain(429, "inactive_subscription", err.message);
    r.headers["retry-after"] = String(INACTIVE_RETRY_AFTER_SECONDS);
    return r;
  }
  const status = STATUS[err.code]!;
  if (err instanceof InvalidPromptError && err.comfy) {
    const { error, node_errors } = err.comfy;
    return {
      status,
      headers: {},
      body: { error: { type: error.type, message: error.message, details: error.details, extra_info: error.extra_info }, node_errors },
    };
  }
  const r = plain(status, err.code, err.message, err.details ? JSON.stringify(err.details) : "");
  if (err.retryAfter !== null) r.headers["retry-after"] = String(Math.ceil(err.retryAfter));
  return r;
}

function plain(status: number, type: string, message: string, details = ""): HostedErrorResponse {
  return { status, headers: {}, body: hostedErrorBody(type, message, details) };
}

/** A hosted error body with no structured detail. */
export function hostedErrorBody(type: string, message: string, details = ""): HostedErrorBody {
  return { error: { type, message, details, extra_info: {} } };
}
