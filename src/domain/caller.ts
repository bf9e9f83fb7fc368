// Who is asking: the account (owner) and, on the serverless surface, the deployment called through.

/** Who is asking, and through which deployment. */
export interface Caller {
  owner: string;
  deployment_id?: string | null;
  /** An anonymous caller of the public demo deployment. */
  demo?: boolean;
}

/** Whether a job belongs to the caller (and to the deployment it calls through, if any). */
export function ownsJob(caller: Caller, job: { owner: string; deployment_id: string | null }): boolean {
  return job.owner === caller.owner && (!caller.deployment_id || job.deployment_id === caller.deployment_id);
}
