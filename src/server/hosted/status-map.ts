// v2 job status -> the hosted interface's job status (docs/decisions.md, "Hosted statuses").
import type { JobRecord } from "../../store/index.ts";

/** Codes for which retrying the same graph cannot help. */
const NON_RETRYABLE = new Set(["invalid_input", "missing_model"]);

/** The hosted status of a job. */
export function hostedStatus(job: Pick<JobRecord, "status" | "error">): string {
  switch (job.status) {
    case "queued":
      return "queued_waiting";
    case "running":
      return "executing";
    case "canceling":
      return "cancel_requested";
    case "succeeded":
      return "success";
    case "failed":
      return NON_RETRYABLE.has(String((job.error as { code?: unknown } | null)?.code)) ? "non_retryable_error" : "error";
    case "canceled":
      return "cancelled";
    case "expired":
      return "lost";
  }
}

/** ComfyUI's execution_error exception_type for a job error code (the seed's six values). */
export function exceptionType(code: string | undefined): string {
  switch (code) {
    case "missing_model":
      return "ModelDownloadError";
    case "out_of_memory":
      return "OOMError";
    case "insufficient_funds":
      return "InsufficientFundsError";
    case "inactive_subscription":
      return "InactiveSubscriptionError";
    default:
      // Node and partner failures, worker loss, timeouts: the seed's list has no closer kind.
      return "ValidationError";
  }
}
