// Typed store failures, shared by every Store implementation so callers map them uniformly.
// (Plain fields rather than constructor parameter properties: runnable with Node's type stripping.)

/** The idempotency key is already claimed (live claim): the request must not be executed again. */
export class IdempotencyKeyReused extends Error {
  override readonly name = "IdempotencyKeyReused";
  readonly owner: string;
  readonly key: string;
  /** The job created under the key, or null while that submission is still in flight. */
  readonly jobId: string | null;
  constructor(owner: string, key: string, jobId: string | null) {
    super("idempotency key already used");
    this.owner = owner;
    this.key = key;
    this.jobId = jobId;
  }
}

/** The database refused to change a job that already reached a terminal status. */
export class TerminalStatusError extends Error {
  override readonly name = "TerminalStatusError";
  readonly jobId: string;
  constructor(jobId: string, options?: { cause?: unknown }) {
    super(`job ${jobId} is in a terminal status and cannot change`, options);
    this.jobId = jobId;
  }
}

/**
 * A write of a run was refused because the run no longer holds its job: the job ended (another
 * process failed it worker_lost, the reaper expired it) or, with leases, another claim holds it.
 * The run must stop and write nothing more.
 */
export class LeaseLostError extends Error {
  override readonly name = "LeaseLostError";
  readonly jobId: string;
  constructor(jobId: string) {
    super(`the run of job ${jobId} no longer holds it`);
    this.jobId = jobId;
  }
}

/** A listing cursor that this store did not issue. */
export class InvalidCursorError extends Error {
  override readonly name = "InvalidCursorError";
  constructor() {
    super("invalid cursor");
  }
}

/** An output asset names a job that does not exist. */
export class UnknownJobError extends Error {
  override readonly name = "UnknownJobError";
  readonly jobId: string;
  constructor(jobId: string, options?: { cause?: unknown }) {
    super(`no job ${jobId}`, options);
    this.jobId = jobId;
  }
}

/** The queue already holds the job's queueLimit: nothing was inserted. */
export class QueueFullError extends Error {
  override readonly name = "QueueFullError";
  readonly limit: number;
  constructor(limit: number) {
    super(`the queue holds ${limit} jobs`);
    this.limit = limit;
  }
}
