// Failures that infrastructure, not the workflow, gives a job: they read the same in every layer.
import { type JOB_ERROR_CODES, NON_RETRYABLE_JOB_ERROR_CODES } from "../../generated/enums.ts";

/** A known JobError.code (the spec's `x-known-values`; the field stays open on the wire). */
export type JobErrorCode = (typeof JOB_ERROR_CODES)[number];

/**
 * The fields of ComfyUI's execution_error that the contract's JobError does not carry, kept with a
 * job that failed in front of ComfyUI (paths and secrets removed): the hosted socket and history
 * send them back; a v2 answer never carries them.
 */
export interface ComfyExecutionDetails {
  exception_type: string;
  /** One string per frame, as ComfyUI's traceback.format_tb gives them. */
  traceback: string[];
  /** The failing node's inputs by input name, as ComfyUI formatted them. */
  current_inputs: Record<string, unknown>;
  /** Ids of the nodes whose outputs were available at the failure. */
  current_outputs: string[];
  executed: string[];
}

/** A job error's code and message, the part every failure has. */
interface FailureText {
  readonly code: JobErrorCode;
  readonly message: string;
}

/** True when running the same graph again cannot help (the spec's `x-non-retryable`). */
export function isNonRetryable(code: unknown): boolean {
  return (NON_RETRYABLE_JOB_ERROR_CODES as readonly unknown[]).includes(code);
}

/** The error of a run that failed without saying how (an engine's unexpected throw, a lost error). */
export const WORKFLOW_FAILED = { code: "node_execution_error", message: "The workflow failed." } as const satisfies FailureText;

/** The error of a job whose worker stopped renewing its lease. */
export const WORKER_LOST = { code: "worker_lost", message: "The worker running this job stopped before it finished." } as const satisfies FailureText;

/** The error of a job ended because a backing service (the database) failed under its run. */
export const UPSTREAM_FAILURE = {
  code: "upstream_error",
  message: "A backing service failed while the job ran; it was stopped. Please try again.",
} as const satisfies FailureText;

/** The error of a job whose secrets (`extra_data`, memory only) were lost with the process holding them. */
export const PARTNER_KEY_LOST = {
  code: "partner_key_lost",
  message: "The partner key given with this job is kept in memory only and did not survive a server restart; submit the job again.",
} as const satisfies FailureText;
