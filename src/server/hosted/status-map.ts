// v2 job status -> the hosted interface's job status (docs/decisions.md, "Hosted statuses"); the
// mapping and the non-retryable codes are the spec's (`x-from-job-status`, `x-non-retryable`).
import type { HostedExceptionType } from "../../../generated/asyncapi-types.ts";
import { HOSTED_JOB_STATUS_BY_JOB_STATUS, type HOSTED_JOB_STATUSES } from "../../../generated/enums.ts";
import { isNonRetryable } from "../../domain/failures.ts";
import type { JobRecord } from "../../store/index.ts";

/** A known hosted job status. */
export type HostedStatus = (typeof HOSTED_JOB_STATUSES)[number];

/** The hosted status of a job. */
export function hostedStatus(job: Pick<JobRecord, "status" | "error">): HostedStatus {
  if (job.status === "failed" && isNonRetryable(job.error?.code)) return "non_retryable_error";
  return HOSTED_JOB_STATUS_BY_JOB_STATUS[job.status];
}

/**
 * ComfyUI's execution_error exception_type for a job error code (one of the seed's six). No job
 * error code means a spent balance or an inactive subscription (a partner node's failure is
 * `partner_node_error`), so InsufficientFundsError and InactiveSubscriptionError never come from here.
 */
export function exceptionType(code: string | undefined): HostedExceptionType {
  switch (code) {
    case "missing_model":
      return "ModelDownloadError";
    case "out_of_memory":
      return "OOMError";
    default:
      // Node and partner failures, worker loss, timeouts: the seed's list has no closer kind.
      return "ValidationError";
  }
}
