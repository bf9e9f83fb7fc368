// One error class per v2 error code (spec ErrorCode), plus the client's own failures.
// A code this client does not know yet still becomes a FlowgateApiError: v2 may add codes.
import type { ErrorCode } from "./types.ts";

/** Fields every v2 API error carries. */
export interface ApiErrorInit {
  status: number;
  code: string;
  message: string;
  details?: Record<string, unknown> | null;
  /** Seconds from `Retry-After`, when the answer had one. */
  retryAfter?: number | null;
  /** The request URL that failed. */
  url?: string;
}

/** An error answer of the v2 interface, in the `{error: {code, message, details}}` envelope. */
export class FlowgateApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown> | null;
  readonly retryAfter: number | null;
  readonly url: string | undefined;

  constructor(init: ApiErrorInit) {
    super(init.message);
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? null;
    this.retryAfter = init.retryAfter ?? null;
    this.url = init.url;
  }
}

/** 400 `invalid_request`: the request envelope is malformed (`details.fields`). */
export class InvalidRequestError extends FlowgateApiError {}
/** 401 `unauthorized`: missing or invalid credentials. */
export class UnauthorizedError extends FlowgateApiError {}
/** 402 `insufficient_credits` (hosted cloud and serverless). */
export class InsufficientCreditsError extends FlowgateApiError {}
/** 403 `forbidden`: authenticated but not allowed (also a bad or expired signed link). */
export class ForbiddenError extends FlowgateApiError {}
/** 404 `not_found`: no such job or asset (or not yours). */
export class NotFoundError extends FlowgateApiError {}
/** 404 `blob_not_found`: no blob you may use has this hash. */
export class BlobNotFoundError extends FlowgateApiError {}
/** 409 `hash_mismatch`: the bytes do not hash to `expected_hash`. */
export class HashMismatchError extends FlowgateApiError {}
/** 413 `payload_too_large`. */
export class PayloadTooLargeError extends FlowgateApiError {}
/** 416 `range_not_satisfiable`. */
export class RangeNotSatisfiableError extends FlowgateApiError {}
/** 422 `invalid_workflow`: per-node reasons in `details.node_errors`. */
export class InvalidWorkflowError extends FlowgateApiError {}
/** 422 `workflow_format_ui`: a UI export was sent instead of the API format. */
export class WorkflowFormatUiError extends FlowgateApiError {}
/** 422 `missing_asset`: a `core/ASSET` reference does not exist or is not yours. */
export class MissingAssetError extends FlowgateApiError {}
/** 422 `idempotency_key_reuse`: the key was presented before; the submission did not run. */
export class IdempotencyKeyReuseError extends FlowgateApiError {}
/** 422 `deployment_stopped`: the deployment needs operator action. */
export class DeploymentStoppedError extends FlowgateApiError {}
/** 422 `metadata_invalid`: the labels break their bounds; `details.key` names the offending key. */
export class MetadataInvalidError extends FlowgateApiError {}
/** 422 `metadata_not_supported`: this surface declines labels; submit without them. */
export class MetadataNotSupportedError extends FlowgateApiError {}
/** 400 `invalid_metadata_filter`: a `metadata[key]` listing filter is malformed. */
export class InvalidMetadataFilterError extends FlowgateApiError {}
/** 400 `invalid_cursor`: a listing `cursor` this server did not issue. */
export class InvalidCursorError extends FlowgateApiError {}
/** 429 `queue_full`: retry after `retryAfter` seconds. */
export class QueueFullError extends FlowgateApiError {}
/** 429 `deployment_not_ready`: still provisioning; retry after `retryAfter` seconds. */
export class DeploymentNotReadyError extends FlowgateApiError {}
/** 429 `too_many_streams`: too many open event streams. */
export class TooManyStreamsError extends FlowgateApiError {}
/** 429 `rate_limited`: retry after `retryAfter` seconds. */
export class RateLimitedError extends FlowgateApiError {}
/** 500 `upstream_error`: a failure behind the API; the message is generic. */
export class UpstreamError extends FlowgateApiError {}
/** 507 `insufficient_storage`: the server's storage is full; nothing was kept. Retry later. */
export class InsufficientStorageError extends FlowgateApiError {}

type ApiErrorClass = new (init: ApiErrorInit) => FlowgateApiError;

/** The class of each code; typecheck fails here when the spec gains a code without a class. */
export const ERROR_CLASSES = {
  invalid_request: InvalidRequestError,
  unauthorized: UnauthorizedError,
  insufficient_credits: InsufficientCreditsError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  blob_not_found: BlobNotFoundError,
  hash_mismatch: HashMismatchError,
  payload_too_large: PayloadTooLargeError,
  range_not_satisfiable: RangeNotSatisfiableError,
  invalid_workflow: InvalidWorkflowError,
  workflow_format_ui: WorkflowFormatUiError,
  missing_asset: MissingAssetError,
  idempotency_key_reuse: IdempotencyKeyReuseError,
  deployment_stopped: DeploymentStoppedError,
  metadata_invalid: MetadataInvalidError,
  metadata_not_supported: MetadataNotSupportedError,
  invalid_metadata_filter: InvalidMetadataFilterError,
  invalid_cursor: InvalidCursorError,
  queue_full: QueueFullError,
  deployment_not_ready: DeploymentNotReadyError,
  too_many_streams: TooManyStreamsError,
  rate_limited: RateLimitedError,
  upstream_error: UpstreamError,
  insufficient_storage: InsufficientStorageError,
} as const satisfies Record<ErrorCode, ApiErrorClass>;

/** The error for a code: its own class when known, FlowgateApiError otherwise. */
export function apiError(init: ApiErrorInit): FlowgateApiError {
  const Class: ApiErrorClass = Object.hasOwn(ERROR_CLASSES, init.code) ? ERROR_CLASSES[init.code as ErrorCode] : FlowgateApiError;
  return new Class(init);
}

/** `Retry-After` as whole seconds (the contract sends an integer), or null. */
export function parseRetryAfter(value: string | null): number | null {
  if (value === null || !/^\s*\d+\s*$/.test(value)) return null;
  return Number(value.trim());
}

/** Reads a non-2xx answer into its typed error (the body is consumed). */
export async function errorFromResponse(res: Response, url = res.url): Promise<FlowgateApiError> {
  const text = await res.text().catch(() => "");
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON (a proxy's page): keep the text for the message
  }
  return errorFromBody(res, body, url);
}

/** The typed error of a non-2xx answer whose body was already read (`body` parsed JSON or text). */
export function errorFromBody(res: Response, body: unknown, url = res.url): FlowgateApiError {
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
  const code = typeof error?.code === "string" ? error.code : fallbackCode(res.status);
  const text = typeof body === "string" ? body : "";
  const message = typeof error?.message === "string" ? error.message : `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ""}`;
  const details = error?.details && typeof error.details === "object" ? (error.details as Record<string, unknown>) : null;
  return apiError({ status: res.status, code, message, details, retryAfter: parseRetryAfter(res.headers.get("retry-after")), url });
}

/** A code for answers without an envelope (HEAD, proxies): the contract's code for the status. */
function fallbackCode(status: number): string {
  const byStatus: Record<number, ErrorCode> = {
    400: "invalid_request",
    401: "unauthorized",
    402: "insufficient_credits",
    403: "forbidden",
    404: "not_found",
    409: "hash_mismatch",
    413: "payload_too_large",
    416: "range_not_satisfiable",
    429: "rate_limited",
    500: "upstream_error",
  };
  return byStatus[status] ?? `http_${status}`;
}

/** A downloaded file did not match the size or blake3 hash its output announced. */
export class DownloadIntegrityError extends Error {
  readonly expected: { size: number; hash: string | null };
  readonly actual: { size: number; hash: string };

  constructor(message: string, expected: { size: number; hash: string | null }, actual: { size: number; hash: string }) {
    super(message);
    this.name = "DownloadIntegrityError";
    this.expected = expected;
    this.actual = actual;
  }
}

/** An error answer of the hosted interface (ComfyUI's shape: `{error: {type, message, ...}, node_errors}`). */
export class HostedApiError extends Error {
  readonly status: number;
  /** `error.type` of the body, when it had one. */
  readonly type: string | null;
  readonly body: unknown;
  readonly retryAfter: number | null;

  constructor(status: number, type: string | null, message: string, body: unknown, retryAfter: number | null = null) {
    super(message);
    this.name = "HostedApiError";
    this.status = status;
    this.type = type;
    this.body = body;
    this.retryAfter = retryAfter;
  }
}

/** Reads a hosted error answer (the body is consumed). */
export async function hostedErrorFromResponse(res: Response): Promise<HostedApiError> {
  const text = await res.text().catch(() => "");
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  const error = (body as { error?: unknown } | null)?.error;
  const type = typeof error === "object" && error !== null && typeof (error as { type?: unknown }).type === "string" ? (error as { type: string }).type : null;
  const message =
    typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string"
      ? (error as { message: string }).message
      : typeof error === "string"
        ? error
        : `HTTP ${res.status}`;
  return new HostedApiError(res.status, type, message, body, parseRetryAfter(res.headers.get("retry-after")));
}
