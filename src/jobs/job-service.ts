// The job lifecycle behind the v2 and hosted interfaces: submit, read, list, cancel.
// It knows nothing of HTTP; failures are ServiceErrors with contract codes.
import type { AssetService } from "../assets/asset-service.ts";
import {
  IdempotencyKeyReused,
  QueueFullError,
  InvalidCursorError,
  TerminalStatusError,
  isStorableWorkflowId,
  isTerminalStatus,
  TERMINAL_STATUSES,
  type AssetRecord,
  type JobLabels,
  type JobLogs,
  type JobRecord,
  type JobStatus,
  type OffsetJobPage,
  type OffsetJobsOptions,
  type Store,
} from "../store/index.ts";
import type { EnginePort, GraphValidation } from "./engine-port.ts";
import { ownsJob, type Caller } from "../domain/caller.ts";
import { notFound, ServiceError } from "../domain/errors.ts";
import type { EventBus } from "./event-bus.ts";
import type { JobQueue } from "./job-queue.ts";
import { uuidv7 } from "../domain/ids.ts";
import { risingPositions } from "./list-positions.ts";

export interface JobServiceOptions {
  store: Store;
  engine: EnginePort;
  assets: AssetService;
  dispatcher: JobQueue;
  events: EventBus;
  now: () => number;
  retentionMs: number;
  /** Bound of the queue: `queue_full` at this many queued jobs. */
  queueLimit: number;
  /** Surface rules a submission must pass first (deployment state, credits). */
  beforeSubmit?: (caller: Caller) => Promise<void>;
}

/** A submission after the envelope was validated. */
export interface Submission {
  workflow: Record<string, unknown>;
  extra_data?: { api_key_vendor_org?: string } | undefined;
  /** Labels, within the contract's bounds (the envelope's validation checked them). */
  metadata?: JobLabels | undefined;
  idempotency_key?: string | undefined;
  /** The job id the client chose (the hosted prompt_id, a checked UUID); absent: a new UUIDv7. */
  id?: string | undefined;
  /** The ComfyUI workflow id (`extra_data.extra_pnginfo.workflow.id`), kept with the job when storable; ignored otherwise. */
  workflow_id?: unknown;
}

/** Everything a read of a job returns. */
export interface JobSnapshot {
  job: JobRecord;
  outputs: AssetRecord[];
  queue_position: number | null;
  logs: JobLogs | null;
}

/** Submit, read, list and cancel jobs. */
export class JobService {
  private readonly o: JobServiceOptions;
  /** Submissions between the queue-bound check and their enqueue (the store batches inserts). */
  private inserting = 0;
  /** Submissions being written, by owner and idempotency key. */
  private readonly writingKeys = new Map<string, Promise<unknown>>();

  constructor(options: JobServiceOptions) {
    this.o = options;
  }

  /** Validates and durably records a job, then queues it. Returns it in `queued`. */
  async submit(caller: Caller, submission: Submission): Promise<JobSnapshot> {
    await this.o.beforeSubmit?.(caller);
    const { workflow } = submission;
    let validation: Extract<GraphValidation, { ok: true }>;
    try {
      validation = await this.admit(caller, workflow);
    } catch (err) {
      // A key already used is a reuse whatever else is wrong; only a refused submission pays
      // for this read (the insert below decides every other case, races included).
      const key = submission.idempotency_key;
      if (key !== undefined && (await this.keyClaimed(caller.owner, key))) throw keyReused();
      throw err;
    }
    const now = this.o.now();
    let job: JobRecord;
    // Counted against the queue bound until it is in the queue (or refused).
    this.inserting++;
    let counted = true;
    const uncount = (): void => {
      if (counted) this.inserting--;
      counted = false;
    };
    const key = submission.idempotency_key === undefined ? undefined : `${caller.owner}\0${submission.idempotency_key}`;
    let inserted: Promise<JobRecord> | undefined;
    let enqueued = false;
    const enqueue = (committed: JobRecord): void => {
      if (enqueued) return;
      enqueued = true;
      uncount();
      this.o.events.publish({ type: "status", job: committed });
      this.o.dispatcher.enqueue(committed, submission.extra_data, submission.id === undefined);
    };
    try {
      inserted = this.o.store.createJob(
        {
          id: submission.id ?? uuidv7(now),
          owner: caller.owner,
          deployment_id: caller.deployment_id ?? null,
          created_at: now,
          expires_at: now + this.o.retentionMs,
          workflow,
          output_node_ids: validation.output_node_ids,
          secrets_given: submission.extra_data !== undefined && Object.keys(submission.extra_data).length > 0,
          ...(submission.metadata === undefined ? {} : { metadata: submission.metadata }),
          // A frontend's workflow id: a value no filter could ask for (too long, not text) is not kept, as it could never match.
          ...(isStorableWorkflowId(submission.workflow_id) ? { workflow_id: submission.workflow_id } : {}),
        },
        // The store checks the bound again as it commits: exact when several processes share it.
        {
          queueLimit: this.o.queueLimit,
          ...(submission.idempotency_key === undefined ? {} : { idempotency: { key: submission.idempotency_key, now } }),
          // Queued as soon as it commits: its run (a ComfyUI prompt forwarded) need not wait for the
          // insert's fsync. The caller's answer still waits for it.
          onCommitted: enqueue,
        },
      );
      if (key !== undefined && !this.writingKeys.has(key)) this.writingKeys.set(key, inserted);
      job = await inserted;
    } catch (err) {
      if (err instanceof IdempotencyKeyReused) throw keyReused();
      if (err instanceof QueueFullError) {
        const given = submission.idempotency_key;
        if (given !== undefined && (await this.keyClaimed(caller.owner, given))) throw keyReused();
        throw queueFull(this.o.dispatcher.retryAfterSeconds(1));
      }
      throw err;
    } finally {
      uncount();
      if (key !== undefined && this.writingKeys.get(key) === inserted) this.writingKeys.delete(key);
    }
    enqueue(job); // a store that does not report the commit: queued now
    // A job that already started (or ended) by now was at the front when it was accepted.
    return { job, outputs: [], queue_position: (await this.o.dispatcher.positionOfNew(job)) ?? 0, logs: null };
  }

  /**
   * Whether a submission under this key is being written or was: a refused submission whose key
   * is taken is a reuse, whatever else is wrong with it (the queue bound included).
   */
  private async keyClaimed(owner: string, key: string): Promise<boolean> {
    const writing = this.writingKeys.get(`${owner}\0${key}`);
    if (
      writing &&
      (await writing.then(
        () => true,
        () => false,
      ))
    )
      return true;
    return (await this.o.store.getIdempotencyClaim(owner, key, this.o.now())) !== null;
  }

  /** The checks before a job is recorded: its format, its asset references, the graph, the queue bound. */
  private async admit(caller: Caller, workflow: Record<string, unknown>): Promise<Extract<GraphValidation, { ok: true }>> {
    if (this.o.engine.isUiFormat(workflow)) {
      throw new ServiceError("workflow_format_ui", "This is a UI-format workflow; export it in the API format.");
    }
    // Asset references first: a malformed one is `missing_asset`, not a graph error.
    await this.checkAssets(caller.owner, workflow);
    const validation = await this.o.engine.validate(workflow);
    if (!validation.ok) throw invalidWorkflow(validation);
    // A fast refusal from this process's queue; a shared one (PostgreSQL) is only partly known
    // here, and the store checks the bound exactly as it commits anyway.
    const queued = this.o.dispatcher.waiting + this.inserting;
    if (!this.o.dispatcher.sharesQueue && queued >= this.o.queueLimit) throw queueFull(this.o.dispatcher.retryAfterSeconds(queued - this.o.queueLimit + 1));
    return validation;
  }

  /** The caller's job with its outputs so far (and its log when `withLogs`), or 404. */
  async get(caller: Caller, id: string, options: { withLogs?: boolean } = {}): Promise<JobSnapshot> {
    const job = await this.owned(caller, id);
    return this.snapshot(job, options.withLogs === true);
  }

  /** A finished job's captured log, or null when it has none (yet); 404 as `get` for a job that is not the caller's. */
  async logs(caller: Caller, id: string): Promise<JobLogs | null> {
    const job = await this.owned(caller, id);
    return isTerminalStatus(job.status) ? this.o.store.getJobLogs(job.id) : null;
  }

  /** A snapshot of a job record the caller already owns. */
  async snapshot(job: JobRecord, withLogs = false): Promise<JobSnapshot> {
    const [outputs, logs] = await Promise.all([
      // A queued job has never run, so it has no outputs: the hot poll of a waiting job skips the read.
      job.status === "queued" ? [] : this.o.store.listJobOutputs(job.id),
      withLogs && isTerminalStatus(job.status) ? this.o.store.getJobLogs(job.id) : Promise.resolve(null),
    ]);
    // A row read as queued is always given a place (JOB-6): one the dispatcher does not hold yet
    // (its submission is still between commit and enqueue) comes after every job it holds.
    const queuePosition = job.status === "queued" ? ((await this.o.dispatcher.position(job.id, job)) ?? this.o.dispatcher.waiting) : null;
    return { job, outputs, queue_position: queuePosition, logs };
  }

  /** The caller's jobs, newest first. */
  async list(
    caller: Caller,
    options: { status?: JobStatus; limit: number; cursor?: string | undefined; metadata?: JobLabels },
  ): Promise<{ jobs: JobSnapshot[]; next_cursor: string | null }> {
    try {
      const page = await this.o.store.listJobs(caller.owner, {
        limit: options.limit,
        ...(options.metadata && Object.keys(options.metadata).length > 0 ? { metadata: options.metadata } : {}),
        ...(options.status ? { status: options.status } : {}),
        ...(options.cursor ? { cursor: options.cursor } : {}),
        ...(caller.deployment_id ? { deployment_id: caller.deployment_id } : {}),
      });
      // Jobs past retention are gone for listing as for GET, even before the reaper purges them.
      const jobs = page.jobs.filter((j) => !this.pastRetention(j));
      // The caller's own jobs: their places rise with submission in one answer (see risingPositions).
      return { jobs: risingPositions(await Promise.all(jobs.map((j) => this.snapshot(j)))), next_cursor: page.next_cursor };
    } catch (err) {
      if (err instanceof InvalidCursorError) {
        throw new ServiceError("invalid_cursor", "The cursor is invalid.");
      }
      throw err;
    }
  }

  /**
   * Cancels: a queued job goes straight to `canceled`; a running one answers `canceling` and
   * ends `canceled` at the next boundary; a terminal one is returned unchanged.
   */
  async cancel(caller: Caller, id: string): Promise<JobSnapshot> {
    const job = await this.owned(caller, id);
    const now = this.o.now();
    let moved: JobRecord | null = null;
    try {
      if (job.status === "queued") {
        moved = await this.o.store.transitionJob(id, ["queued"], "canceled", { completed_at: now });
        if (moved) {
          this.o.dispatcher.dequeue(id);
          this.o.dispatcher.left();
        }
      }
      if (!moved) {
        moved = await this.o.store.transitionJob(id, ["running"], "canceling", { updated_at: now });
        if (moved) this.o.dispatcher.abort(id);
      }
    } catch (err) {
      if (!(err instanceof TerminalStatusError)) throw err;
    }
    if (moved) this.o.events.publish({ type: "status", job: moved });
    return this.snapshot(moved ?? (await this.o.store.getJob(id)) ?? job);
  }

  /** The graph a job ran; never its extra_data, which was never stored. */
  async workflow(caller: Caller, id: string): Promise<Record<string, unknown>> {
    await this.owned(caller, id);
    const graph = await this.o.store.getJobWorkflow(id);
    if (!graph) throw notFound();
    return graph;
  }

  /** The caller's jobs in the hosted history (every live one, the finished ones not taken out), sorted and paged by offset. */
  atOffset(caller: Caller, options: Omit<OffsetJobsOptions, "deployment_id" | "now">): Promise<OffsetJobPage> {
    return this.o.store.listJobsAtOffset(caller.owner, {
      ...options,
      now: this.o.now(),
      ...(caller.deployment_id ? { deployment_id: caller.deployment_id } : {}),
    });
  }

  /** The caller's running and canceling jobs, oldest first (at most its slots, so one page holds them). */
  async running(caller: Caller): Promise<JobRecord[]> {
    const page = await this.o.store.listJobs(caller.owner, { status: ["running", "canceling"], limit: 1000 });
    return page.jobs.sort((a, b) => a.seq - b.seq);
  }

  /** The caller's queued jobs in submission order, `limit` after submission number `afterSeq`. */
  queued(caller: Caller, limit: number, afterSeq = 0): Promise<JobRecord[]> {
    return this.o.store.queuedJobs(limit, afterSeq, caller.owner);
  }

  /** How many of the caller's jobs are queued or running, counted in one read (a job starting is never missed nor counted twice). */
  remaining(caller: Caller): Promise<number> {
    return this.o.store.countLive(caller.owner);
  }

  /** The caller's finished jobs, newest first, at most `limit`. */
  async finished(caller: Caller, limit: number): Promise<JobRecord[]> {
    const page = await this.o.store.listJobs(caller.owner, { status: TERMINAL_STATUSES, limit, in_history: true });
    return page.jobs;
  }

  /**
   * Takes the caller's finished jobs out of the hosted history: the named ones (ids that are not
   * the caller's, unknown, or of live jobs are ignored, as ComfyUI ignores ids not in its history),
   * or all of them when `ids` is null. The jobs stay readable through v2 until they expire.
   */
  async leaveHistory(caller: Caller, ids: readonly string[] | null): Promise<number> {
    if (ids === null) return this.o.store.hideFromHistory(caller.owner, null);
    const owned: string[] = [];
    for (const id of new Set(ids)) {
      const job = await this.o.store.getJob(id);
      // A deployment's caller sees only that deployment's jobs, here as everywhere.
      if (job && ownsJob(caller, job)) owned.push(id);
    }
    return owned.length === 0 ? 0 : this.o.store.hideFromHistory(caller.owner, owned);
  }

  /** Whether a finished job the caller holds is still in the hosted history. */
  async inHistory(job: JobRecord): Promise<boolean> {
    return isTerminalStatus(job.status) && !(await this.o.store.hiddenFromHistory(job.id));
  }

  /** The outputs of job records the caller already holds (a page of a list), in one read; none for a queued job. */
  async outputsOfJobs(jobs: readonly JobRecord[]): Promise<Map<string, AssetRecord[]>> {
    const ran = jobs.filter((job) => job.status !== "queued").map((job) => job.id);
    return ran.length === 0 ? new Map() : this.o.store.listOutputsOfJobs(ran);
  }

  /** The graph and the outputs of a job record the caller already holds (hosted history and queue views). */
  async graphAndOutputs(job: JobRecord): Promise<{ workflow: Record<string, unknown>; outputs: AssetRecord[] }> {
    const [workflow, outputs] = await Promise.all([this.o.store.getJobWorkflow(job.id), this.o.store.listJobOutputs(job.id)]);
    return { workflow: workflow ?? {}, outputs };
  }

  /** The graph of a job record the caller already holds, or `{}`. */
  async graphOf(job: JobRecord): Promise<Record<string, unknown>> {
    return (await this.o.store.getJobWorkflow(job.id)) ?? {};
  }

  /** Whether any caller's job has this id (a client-chosen id must be new). */
  async exists(id: string): Promise<boolean> {
    return (await this.o.store.getJob(id)) !== null;
  }

  /** The caller's job record, or 404 `not_found` (another caller's job looks missing). */
  async owned(caller: Caller, id: string): Promise<JobRecord> {
    const job = await this.o.store.getJob(id);
    if (!job || !ownsJob(caller, job)) throw notFound();
    if (this.pastRetention(job)) throw notFound();
    return job;
  }

  /** A finished job past its expires_at: deleted as far as callers can tell. */
  private pastRetention(job: JobRecord): boolean {
    return job.expires_at <= this.o.now() && isTerminalStatus(job.status);
  }

  /** Rejects references to assets that do not exist or are not the caller's. */
  private async checkAssets(owner: string, workflow: Record<string, unknown>): Promise<void> {
    const missing: Array<{ node_id: string; field: string; asset_id: string | null }> = [];
    for (const ref of this.o.engine.assetReferences(workflow)) {
      const ok =
        ref.id !== null &&
        (await this.o.assets.get(owner, ref.id).then(
          () => true,
          () => false,
        ));
      if (!ok) missing.push({ node_id: ref.node_id, field: ref.input, asset_id: ref.id });
    }
    if (missing.length > 0) {
      throw new ServiceError("missing_asset", "A referenced asset does not exist or is not yours.", { assets: missing });
    }
  }
}

function queueFull(retryAfter: number): ServiceError {
  return new ServiceError("queue_full", "The queue is full; retry later.", null, retryAfter);
}

function keyReused(): ServiceError {
  return new ServiceError("idempotency_key_reuse", "This Idempotency-Key has already been used.");
}

function invalidWorkflow(v: Extract<GraphValidation, { ok: false }>): ServiceError {
  return new ServiceError("invalid_workflow", "The workflow is invalid.", { node_errors: v.node_errors });
}
