// Failures that infrastructure, not the workflow, gives a job: they read the same in every layer.

/** The error of a job whose worker stopped renewing its lease. */
export const WORKER_LOST = { code: "worker_lost", message: "The worker running this job stopped before it finished." } as const;

/** The error of a job ended because a backing service (the database) failed under its run. */
export const UPSTREAM_FAILURE = { code: "upstream_error", message: "A backing service failed while the job ran; it was stopped. Please try again." } as const;

/** The error of a job whose secrets (`extra_data`, memory only) were lost with the process holding them. */
export const PARTNER_KEY_LOST = {
  code: "partner_key_lost",
  message: "The partner key given with this job is kept in memory only and did not survive a server restart; submit the job again.",
} as const;
