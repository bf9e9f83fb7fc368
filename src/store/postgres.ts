// The Store on PostgreSQL, for several flowgate processes sharing one database. Every rule the
// SQLite store keeps holds here, enforced by the database rather than by one process: the
// terminal guard is a trigger, an idempotency key is claimed by one INSERT ... ON CONFLICT on its
// primary key in the job's own transaction, and every guarded move is one UPDATE ... WHERE on the
// row. A commit returns once PostgreSQL made it durable (synchronous_commit), so nothing is
// acknowledged before it is. Submissions are inserted in batches (group commit), like SQLite's;
// the admission of a batch against the queue bound across processes is postgres-admission.ts.
import type pg from "pg";
import { CheckedStore } from "./checked-store.ts";
import { LeaseLostError, TerminalStatusError, UnknownJobError } from "./errors.ts";
import { BatchedReads } from "./batched-reads.ts";
import { GroupCommit, type Outcomes } from "./group-commit.ts";
import { changedAt } from "./input-checks.ts";
import { claim, insertBatchOnce, type PendingInsert } from "./postgres-admission.ts";
import { inTransaction, openPostgresPool, type PostgresOptions } from "./postgres-pool.ts";
import {
  CANDIDATES_BEYOND,
  PG_NOTIFYING_SQL,
  PG_RIDING_SQL,
  PG_SQL,
  payloadsParam,
  pgListJobsSql,
  pgListLabeledJobsSql,
  pgOffsetJobsSql,
} from "./postgres-queries.ts";
import { stampSnapshot } from "./postgres-positions.ts";
import { PG_TERMINAL_SQLSTATE } from "./postgres-schema.ts";
import { PG_ROWS, toPendingBlob, toWorkflow, type Row } from "./rows.ts";
import type { JobQuery, StoreDialect } from "./store-dialect.ts";
import type { ClaimRider } from "./job-leases.ts";
import { RUN_STATUSES } from "./sql-fragments.ts";
import {
  assetRecordOf,
  isTerminalStatus,
  type AssetDeletion,
  type CreateJobOptions,
  type AssetFolder,
  type AssetRecord,
  type IdempotencyClaim,
  type JobLogs,
  type JobPatch,
  type JobProgress,
  type JobRecord,
  type JobStatus,
  type JsonObject,
  type NewAsset,
  type NewJob,
  type Notifications,
  type OffsetJobPage,
  type OffsetJobsOptions,
  type InlineBlob,
  type PendingBlob,
  type PurgeResult,
  type RunFence,
  type Store,
  type TransitionOptions,
} from "./types.ts";

const { toAsset, toClaim, toLogs } = PG_ROWS;
/** A job row as a record (the leases' claims read theirs with it). */
export const toJob = PG_ROWS.toJob;

/**
 * The store's fixed statements by text, each with a name: a named statement is parsed and
 * planned once per connection, not on every call (node-postgres prepares it on first use).
 */
const STATEMENT_NAMES = new Map(Object.entries({ ...PG_SQL, ...PG_NOTIFYING_SQL, ...PG_RIDING_SQL }).map(([key, text]) => [text as string, `fg_${key}`]));
type Queryable = pg.Pool | pg.PoolClient;

/** One run's end as transitionJobWithAssets takes it. */
interface EndWrite {
  id: string;
  from: readonly JobStatus[];
  to: JobStatus;
  patch: JobPatch;
  assets: readonly NewAsset[];
  pending: readonly PendingBlob[];
  fence: RunFence | undefined;
  notify: Notifications | undefined;
}
/** What an end wrote: the job and its records, or null when its move was refused. */
type EndResult = { job: JobRecord; assets: AssetRecord[] } | null;

const PG_FOREIGN_KEY_VIOLATION = "23503";
const PG_CHECK_VIOLATION = "23514";

/** The dialect over a PostgreSQL database (one schema), through a node-postgres pool (its arguments checked by CheckedStore). */
export class PostgresStore implements StoreDialect {
  readonly #pool: pg.Pool;
  /** Submissions, batched: each batch commits once the previous one did, with whatever arrived meanwhile. */
  readonly #inserts = new GroupCommit<PendingInsert, JobRecord>((batch, batched) => insertBatchOnce(this.#pool, batch, batched));
  /** Runs' ends with their last records, batched: the ends that arrive while one commits share the next transaction. */
  readonly #ends = new GroupCommit<EndWrite, EndResult>((batch, batched) =>
    batched && canEndInOneStatement(batch) ? this.#endAll(batch) : this.#commitEnds(batch),
  );
  /** Job reads, batched: the GETs of one turn read their rows in one round trip. */
  readonly #jobReads = new BatchedReads<string, Row>((ids) => this.#readJobs(ids));
  #closed = false;
  /** The claim the ends' statements carry (carryClaims), if any. */
  #rider: ClaimRider | null = null;

  private constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /** Connects, creates the schema when asked, and runs the migrations not yet applied; a checked Store. */
  static async open(options: PostgresOptions): Promise<Store> {
    return new CheckedStore(new PostgresStore(await openPostgresPool(options)));
  }

  async createJob(job: NewJob, options: CreateJobOptions = {}): Promise<JobRecord> {
    const inserted = await this.#inserts.submit({ job, idempotency: options.idempotency, queueLimit: options.queueLimit });
    // A commit here is durable (synchronous_commit): committed and durable are one moment.
    options.onCommitted?.(inserted);
    return inserted;
  }

  async claimIdempotencyKey(owner: string, key: string, now: number, ttlMs?: number): Promise<IdempotencyClaim> {
    const options = ttlMs === undefined ? { key, now } : { key, now, ttlMs };
    return inTransaction(this.#pool, (client) => claim(client, owner, options, null));
  }

  async releaseIdempotencyKey(owner: string, key: string): Promise<boolean> {
    return ((await this.#query(PG_SQL.releaseKey, [owner, key])).rowCount ?? 0) > 0;
  }

  async getIdempotencyClaim(owner: string, key: string, now: number): Promise<IdempotencyClaim | null> {
    const row = await this.#one(PG_SQL.getClaim, [owner, key, now]);
    return row === undefined ? null : toClaim(row);
  }

  async getJob(id: string): Promise<JobRecord | null> {
    if (id.includes("\0")) return null; // PostgreSQL text cannot hold it: no job has such an id
    const row = await this.#jobReads.get(id);
    // A queued job's record carries the position snapshot's stamp read with it (one round trip a poll).
    // Each caller gets a record of its own, even when several asked for the same job.
    return row === undefined ? null : stampSnapshot(toJob(row), row);
  }

  /** The rows of a batch of job reads, by id. */
  async #readJobs(ids: string[]): Promise<Map<string, Row>> {
    const { rows } = ids.length === 1 ? await this.#query(PG_SQL.getJob, ids) : await this.#query(PG_SQL.getJobs, [ids]);
    return new Map(rows.map((row) => [row.id as string, row]));
  }

  async getJobWorkflow(id: string): Promise<JsonObject | null> {
    const row = await this.#one(PG_SQL.getWorkflow, [id]);
    return row === undefined ? null : toWorkflow(row);
  }

  async getJobLogs(id: string): Promise<JobLogs | null> {
    const row = await this.#one(PG_SQL.getLogs, [id]);
    return row === undefined ? null : toLogs(row);
  }

  async listJobs(owner: string, query: JobQuery): Promise<JobRecord[]> {
    const { statuses, labels } = query;
    const params: unknown[] = [owner, query.before, query.fetch];
    if (labels !== null)
      params.push(
        labels.map(([k]) => k),
        labels.map(([, v]) => v),
      );
    if (statuses !== null) params.push(statuses);
    if (query.deployment_id !== undefined) params.push(query.deployment_id);
    const byDeployment = query.deployment_id !== undefined;
    const sql =
      labels === null
        ? pgListJobsSql(statuses !== null, byDeployment, query.in_history)
        : pgListLabeledJobsSql(labels.length, statuses !== null, byDeployment, query.in_history);
    // The listing's few shapes (statuses, labels, deployment, history) are named too: a filtered
    // page's plan, which costs several times its execution, is made once per connection.
    if (!STATEMENT_NAMES.has(sql)) STATEMENT_NAMES.set(sql, `fg_list_jobs_${STATEMENT_NAMES.size}`);
    return (await this.#query(sql, params)).rows.map(toJob);
  }

  async listJobsAtOffset(owner: string, query: OffsetJobsOptions): Promise<OffsetJobPage> {
    const byStatus = query.status !== undefined;
    const byDeployment = query.deployment_id !== undefined;
    const filters: unknown[] = [];
    if (byStatus) filters.push(query.status);
    if (byDeployment) filters.push(query.deployment_id);
    if (query.workflow_id !== undefined) filters.push(query.workflow_id);
    const sql = pgOffsetJobsSql(byStatus, byDeployment, query.sort, query.descending, query.workflow_id !== undefined);
    if (!STATEMENT_NAMES.has(sql)) STATEMENT_NAMES.set(sql, `fg_offset_jobs_${STATEMENT_NAMES.size}`);
    const { rows } = await this.#query(sql, [owner, query.now, query.limit, query.offset, ...filters]);
    if (rows.length > 0) return { jobs: rows.map(toJob), total: Number(rows[0]!.total) };
    // A page past the end carries no row to count with: count at offset 0, one row is enough.
    const first = query.offset === 0 ? [] : (await this.#query(sql, [owner, query.now, 1, 0, ...filters])).rows;
    return { jobs: [], total: first.length > 0 ? Number(first[0]!.total) : 0 };
  }

  async hideFromHistory(owner: string, ids: readonly string[] | null): Promise<number> {
    return (await this.#query(PG_SQL.hideHistory, [owner, ids])).rowCount ?? 0;
  }

  async hiddenFromHistory(id: string): Promise<boolean> {
    return (await this.#one(PG_SQL.historyHidden, [id]))?.history_hidden === true;
  }

  async transitionJob(id: string, from: readonly JobStatus[], to: JobStatus, patch: JobPatch = {}, options: TransitionOptions = {}): Promise<JobRecord | null> {
    const job = await this.#transition(id, from, to, patch, this.#pool, options.fence, options.notify);
    options.notify?.sent?.();
    options.onCommitted?.(job); // a commit here is durable already
    return job;
  }

  async transitionJobWithAssets(
    id: string,
    from: readonly JobStatus[],
    to: JobStatus,
    patch: JobPatch,
    assets: readonly NewAsset[],
    pending: readonly PendingBlob[] = [],
    fence?: RunFence,
    notify?: Notifications,
  ): Promise<{ job: JobRecord; assets: AssetRecord[] } | null> {
    return this.#ends.submit({ id, from, to, patch, assets, pending, fence, notify });
  }

  carryClaims(rider: ClaimRider | null): boolean {
    this.#rider = rider;
    return true;
  }

  /**
   * Writes a batch of ends in one statement (PG_SQL.endJobs): one round trip and one commit for
   * all, each move fenced by its own lease (a refused one writes nothing of its end and settles
   * null). A statement that fails rolls back as a whole; GroupCommit then writes each end alone
   * (#commitEnds), which tells each end's own error. Ends of runs (running to a terminal status)
   * carry the rider's claim, if it asks for one (PG_RIDING_SQL.endJobsClaiming).
   */
  async #endAll(ends: readonly EndWrite[]): Promise<Outcomes<EndResult>> {
    const field = <T>(pick: (patch: JobPatch) => T | undefined) => [ends.map((e) => pick(e.patch) !== undefined), ends.map((e) => pick(e.patch) ?? null)];
    const records = ends.flatMap((end, i) => end.assets.map((asset) => ({ asset, end: i + 1 })));
    const column = <T>(pick: (asset: NewAsset) => T) => records.map((r) => pick(r.asset));
    const then = ends.flatMap((end, i) => (end.notify?.ifMoved ?? []).map((payload) => ({ payload, end: i + 1 })));
    const params = [
      ends.map((e) => e.id),
      ends.map((e) => e.to),
      ends.map((e) => e.from.join(",")),
      ...field((p) => p.started_at),
      ...field((p) => p.completed_at),
      ...field((p) => jsonText(p.progress)),
      ...field((p) => jsonText(p.error)),
      ...field((p) => p.cost),
      ends.map((e) => e.fence !== undefined),
      ends.map((e) => e.fence?.workerId ?? null),
      ends.map((e) => e.fence?.epoch ?? 0),
      ends.map((e) => changedAt(e.patch)),
      ends.find((e) => e.notify !== undefined)?.notify?.channel ?? "",
      payloadsParam(ends.flatMap((e) => e.notify?.payloads ?? [])),
      then.map((t) => t.end),
      payloadsParam(then.map((t) => t.payload)),
      column((a) => a.id),
      column((a) => a.owner),
      column((a) => a.job_id ?? null),
      column((a) => a.node_id ?? null),
      column((a) => a.name),
      column((a) => a.type ?? null),
      column((a) => a.content_type),
      column((a) => a.size_bytes),
      column((a) => a.hash ?? null),
      column((a) => a.blob_key),
      column((a) => a.folder),
      column((a) => a.file_path ?? null),
      column((a) => JSON.stringify(a.tags ?? [])),
      column((a) => a.created_at),
      column((a) => a.expires_at ?? null),
      records.map((r) => r.end),
      column((a) => bytea(a.inline)),
    ];
    const rider = this.#rider;
    const ride = rider !== null && ends.every(endsRun) ? rider.ask(ends.map((e) => e.id)) : null;
    if (rider === null || ride === null) return this.#endsDone(ends, (await this.#query(PG_SQL.endJobs, params)).rows);
    let rows: Row[];
    try {
      const { workerId, startedAt, leaseMs, heldSecrets, limit } = ride;
      ({ rows } = await this.#query(PG_RIDING_SQL.endJobsClaiming, [
        ...params,
        workerId,
        startedAt,
        leaseMs,
        [],
        heldSecrets,
        limit,
        limit + CANDIDATES_BEYOND,
      ]));
    } catch (error) {
      rider.answered(ride, { error });
      throw error;
    }
    const claimed = rows
      .filter((row) => row.fg_kind === "c")
      .sort((a, b) => Number(a.level) - Number(b.level) || Number(a.seq) - Number(b.seq))
      .map((row) => ({ job: toJob(row), epoch: Number(row.lease_epoch), workflow: toWorkflow(row) }));
    const candidates = Number(rows.find((row) => row.fg_kind === "n")?.candidates ?? 0);
    // The claimed runs start before the ends settle: a stop waiting on those runs finds these.
    rider.answered(ride, { claimed, candidates });
    return this.#endsDone(
      ends,
      rows.filter((row) => row.fg_kind === "e"),
    );
  }

  /** The outcomes of a batch of ends from the rows of the ends that moved. */
  #endsDone(ends: readonly EndWrite[], rows: Row[]): Outcomes<EndResult> {
    for (const end of ends) end.notify?.sent?.();
    const moved = new Map(rows.map((row) => [Number(row.ord), toJob(row)]));
    return ends.map((end, i) => {
      const job = moved.get(i + 1);
      const value: EndResult =
        job === undefined ? null : { job, assets: end.assets.map((asset) => ({ ...assetRecordOf(asset), expires_at: asset.expires_at ?? job.expires_at })) };
      return { status: "fulfilled", value };
    });
  }

  /**
   * Writes a batch of ends in one transaction (one BEGIN, COMMIT and WAL flush for all). Each move
   * is fenced by its own lease in its own statement: a refused one writes nothing of its end and
   * settles null, the others commit; an error rolls the batch back (GroupCommit then writes each
   * end in a transaction of its own).
   */
  async #commitEnds(ends: readonly EndWrite[]): Promise<Outcomes<EndResult>> {
    const done = await inTransaction(this.#pool, async (client) => {
      const results: EndResult[] = [];
      for (const end of ends) results.push(await this.#writeEnd(end, client));
      return results;
    });
    for (const end of ends) end.notify?.sent?.();
    return done.map((value) => ({ status: "fulfilled", value }));
  }

  /** One end's move, kept blobs and records on `client`, inside the batch's transaction. */
  async #writeEnd({ id, from, to, patch, assets, pending, fence, notify }: EndWrite, client: pg.PoolClient): Promise<EndResult> {
    // What goes only if the row moves is sent by the move's own statement, before its status notification.
    const job = await this.#transition(id, from, to, patch, client, fence, notify);
    if (job === null) return null;
    for (const blob of pending) await client.query(PG_SQL.keepBlob, [blob.key, bytea(blob.bytes)]);
    const added: AssetRecord[] = [];
    for (const asset of assets) added.push(await this.#insertAsset(asset, client));
    return { job, assets: added };
  }

  /** The guarded UPDATE of transitionJob on `on`. */
  async #transition(
    id: string,
    fromStatuses: readonly JobStatus[],
    to: JobStatus,
    patch: JobPatch,
    on: Queryable,
    fence?: RunFence,
    notify?: Notifications,
  ): Promise<JobRecord | null> {
    const field = (value: unknown) => [value !== undefined, value ?? null];
    const params = [
      id,
      to,
      fromStatuses,
      ...field(patch.started_at),
      ...field(patch.completed_at),
      ...field(jsonText(patch.progress)),
      ...field(jsonText(patch.error)),
      ...field(patch.cost),
      fence !== undefined,
      fence?.workerId ?? null,
      fence?.epoch ?? 0,
      changedAt(patch),
    ];
    try {
      const row = notify?.ifMoved?.length
        ? await this.#one(PG_NOTIFYING_SQL.transitionNotifyThen, [...params, notify.channel, payloadsParam(notify.payloads), payloadsParam(notify.ifMoved)], on)
        : notify?.payloads.length
          ? await this.#one(PG_NOTIFYING_SQL.transitionNotify, [...params, notify.channel, payloadsParam(notify.payloads)], on)
          : await this.#one(PG_SQL.transition, params, on);
      return row === undefined ? null : toJob(row);
    } catch (error) {
      if (sqlState(error) === PG_TERMINAL_SQLSTATE) throw new TerminalStatusError(id, { cause: error });
      throw portable(error);
    }
  }

  async updateProgress(id: string, progress: JobProgress | null, fence?: RunFence, notify?: Notifications): Promise<boolean> {
    const json = progress === null ? null : JSON.stringify(progress);
    const sent = notify?.payloads.length ? [notify.channel, payloadsParam(notify.payloads)] : null;
    if (fence === undefined) {
      const { rowCount } = sent
        ? await this.#query(PG_NOTIFYING_SQL.updateProgressNotify, [id, json, ...sent])
        : await this.#query(PG_SQL.updateProgress, [id, json]);
      notify?.sent?.();
      return (rowCount ?? 0) > 0;
    }
    const params = [id, json, fence.workerId, fence.epoch];
    const { rowCount } = sent
      ? await this.#query(PG_NOTIFYING_SQL.updateProgressFencedNotify, [...params, ...sent])
      : await this.#query(PG_SQL.updateProgressFenced, params);
    notify?.sent?.();
    if ((rowCount ?? 0) === 0) throw new LeaseLostError(id);
    return true;
  }

  async setLogs(id: string, logs: JobLogs | null, fence?: RunFence): Promise<boolean> {
    // A NUL the process printed cannot be stored in PostgreSQL text: it reads back as U+FFFD.
    const params: unknown[] = logs === null ? [id, null, null, null] : [id, logs.text.replaceAll("\0", "\uFFFD"), logs.truncated, logs.captured_at];
    if (fence === undefined) return ((await this.#query(PG_SQL.setLogs, params)).rowCount ?? 0) > 0;
    if (((await this.#query(PG_SQL.setLogsFenced, [...params, fence.workerId, fence.epoch])).rowCount ?? 0) === 0) throw new LeaseLostError(id);
    return true;
  }

  async queuedJobs(limit: number, afterSeq: number, owner: string | undefined): Promise<JobRecord[]> {
    const { rows } =
      owner === undefined ? await this.#query(PG_SQL.queuedJobs, [afterSeq, limit]) : await this.#query(PG_SQL.ownerQueuedJobs, [afterSeq, limit, owner]);
    return rows.map(toJob);
  }

  async queuedJobsWithSecrets(): Promise<string[]> {
    return (await this.#query(PG_SQL.queuedWithSecrets, [])).rows.map((row) => row.id as string);
  }

  async countQueued(): Promise<number> {
    return (await this.#one(PG_SQL.countQueued, []))!.n as number;
  }

  async countLive(owner: string): Promise<number> {
    return (await this.#one(PG_SQL.countOwnerLive, [owner]))!.n as number;
  }

  async jobsInStatus(statuses: readonly JobStatus[]): Promise<JobRecord[]> {
    return (await this.#query(PG_SQL.jobsInStatus, [statuses])).rows.map(toJob);
  }

  async addAsset(asset: NewAsset, fence?: RunFence): Promise<AssetRecord> {
    const jobId = asset.job_id ?? null;
    if (fence === undefined || jobId === null) return this.#insertAsset(asset, this.#pool);
    return inTransaction(this.#pool, async (client) => {
      const held = await this.#one(PG_SQL.lockFence, [jobId, fence.workerId, fence.epoch], client);
      if (held === undefined) throw new LeaseLostError(jobId);
      return this.#insertAsset(asset, client);
    });
  }

  /** Inserts one checked asset record on `on`. */
  async #insertAsset(asset: NewAsset, on: Queryable): Promise<AssetRecord> {
    const jobId = asset.job_id ?? null;
    try {
      const row = await this.#one(
        PG_SQL.insertAsset,
        [
          asset.id,
          asset.owner,
          jobId,
          asset.node_id ?? null,
          asset.name,
          asset.type ?? null,
          asset.content_type,
          asset.size_bytes,
          asset.hash ?? null,
          asset.blob_key,
          asset.folder,
          asset.file_path ?? null,
          JSON.stringify(asset.tags ?? []),
          asset.created_at,
          asset.expires_at ?? null,
          bytea(asset.inline),
        ],
        on,
      );
      return toAsset(row!);
    } catch (error) {
      if (jobId !== null && sqlState(error) === PG_FOREIGN_KEY_VIOLATION) throw new UnknownJobError(jobId, { cause: error });
      throw portable(error);
    }
  }

  async getAsset(id: string): Promise<AssetRecord | null> {
    const row = await this.#one(PG_SQL.getAsset, [id]);
    return row === undefined ? null : toAsset(row);
  }

  async listJobOutputs(jobId: string): Promise<AssetRecord[]> {
    return (await this.#query(PG_SQL.listJobOutputs, [jobId])).rows.map(toAsset);
  }

  async listOutputsOfJobs(jobIds: readonly string[]): Promise<AssetRecord[]> {
    return (await this.#query(PG_SQL.listOutputsOfJobs, [jobIds])).rows.map(toAsset);
  }

  async deleteAsset(id: string): Promise<AssetDeletion | null> {
    return inTransaction(this.#pool, async (client) => {
      const row = await this.#one(PG_SQL.deleteAsset, [id], client);
      if (row === undefined) return null;
      const blob_key = row.blob_key as string;
      return { blob_key, blob_unreferenced: (await this.#one(PG_SQL.blobReferenced, [blob_key], client)) === undefined };
    });
  }

  async findAssetByBlob(owner: string, blobKey: string): Promise<AssetRecord | null> {
    const row = await this.#one(PG_SQL.findAssetByBlob, [owner, blobKey]);
    return row === undefined ? null : toAsset(row);
  }

  async findAssetByName(owner: string, name: string, folder?: AssetFolder): Promise<AssetRecord | null> {
    const row = await this.#one(PG_SQL.findAssetByName, [owner, name, folder ?? null]);
    return row === undefined ? null : toAsset(row);
  }

  async allotOutputNames(owner: string, folder: AssetFolder, prefix: string, ext: string, count: number): Promise<number> {
    const params = [owner, folder, prefix, ext, count];
    const bumped = await this.#one(PG_SQL.bumpOutputNames, params);
    return Number((bumped ?? (await this.#one(PG_SQL.startOutputNames, params)))!.first);
  }

  async takeTurn(task: string, everyMs: number, now: number): Promise<boolean> {
    return (await this.#one(PG_SQL.takeTurn, [task, everyMs, now])) !== undefined;
  }

  async blobsInUse(keys: readonly string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    return new Set((await this.#query(PG_SQL.blobsInUse, [keys])).rows.map((row) => row.blob_key as string));
  }

  async blobReferenced(blobKey: string): Promise<boolean> {
    return (await this.#one(PG_SQL.blobReferenced, [blobKey])) !== undefined;
  }

  async inlineBlob(key: string): Promise<InlineBlob | null> {
    const row = await this.#one(PG_SQL.inlineBlob, [key]);
    return row === undefined ? null : { bytes: row.bytes as Buffer, touched_at: Number(row.touched_at) };
  }

  async inlineBlobKeys(afterKey: string, limit: number): Promise<string[]> {
    return (await this.#query(PG_SQL.inlineBlobKeys, [afterKey, limit])).rows.map((row) => row.blob_key as string);
  }

  async dropInlineBlob(key: string, unlessTouchedAfter: number): Promise<boolean> {
    return inTransaction(this.#pool, async (client) => {
      if ((await this.#one(PG_SQL.lockInline, [key, unlessTouchedAfter], client)) === undefined) return false;
      return ((await this.#query(PG_SQL.dropInline, [key], client)).rowCount ?? 0) > 0;
    });
  }

  async pendingBlobs(afterKey: string, limit: number): Promise<PendingBlob[]> {
    const { rows } = await this.#query(PG_SQL.pendingBlobs, [afterKey, limit]);
    return rows.map(toPendingBlob);
  }

  async dropPendingBlobs(keys: readonly string[]): Promise<void> {
    if (keys.length > 0) await this.#query(PG_SQL.dropBlobs, [[...keys]]);
  }

  async expireJobs(now: number, limit: number): Promise<JobRecord[]> {
    const { rows } = await this.#query(PG_SQL.expireJobs, [now, limit]);
    return rows.map(toJob).sort((a, b) => a.seq - b.seq);
  }

  async purgeExpired(now: number, cutoff: number, limit: number): Promise<PurgeResult> {
    return inTransaction(this.#pool, async (client) => {
      const job_ids = (await client.query(PG_SQL.purgeableJobs, [cutoff, limit])).rows.map((row) => row.id as string);
      const order = new Map(job_ids.map((id, i) => [id, i]));
      // Assets in the order SQLite gives them: job by job, each job's in commit order.
      const jobAssets = job_ids.length === 0 ? [] : (await client.query(PG_SQL.deleteJobsAssets, [job_ids])).rows;
      jobAssets.sort((a, b) => order.get(a.job_id)! - order.get(b.job_id)! || (a.seq as number) - (b.seq as number));
      if (job_ids.length > 0) await client.query(PG_SQL.deleteJobs, [job_ids]);
      const uploads = (await client.query(PG_SQL.deleteExpiredUploads, [cutoff, limit])).rows;
      uploads.sort((a, b) => (a.seq as number) - (b.seq as number));
      const claims = (await client.query(PG_SQL.deleteExpiredClaims, [now, limit])).rowCount ?? 0;
      const removed = [...jobAssets, ...uploads];
      const candidates = [...new Set(removed.map((row) => row.blob_key as string))];
      const referenced =
        candidates.length === 0
          ? new Set<string>()
          : new Set((await client.query(PG_SQL.referencedBlobs, [candidates])).rows.map((row) => row.blob_key as string));
      return {
        job_ids,
        asset_ids: removed.map((row) => row.id as string),
        unreferenced_blob_keys: candidates.filter((key) => !referenced.has(key)),
        more: job_ids.length === limit || uploads.length === limit || claims === limit,
      };
    });
  }

  async check(): Promise<void> {
    await this.#query("SELECT 1", []);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Batches still waiting for their turn commit before the pool goes.
    await Promise.all([this.#inserts.flush(), this.#ends.flush()]);
    await this.#pool.end();
  }

  async #one(text: string, params: unknown[], on: Queryable = this.#pool): Promise<Row | undefined> {
    return (await this.#query(text, params, on)).rows[0];
  }

  /**
   * One statement. PostgreSQL text cannot hold U+0000 (SQLite's can): a read, update or delete
   * matching on such a value finds nothing without asking, and an insert of one is refused.
   */
  async #query(text: string, params: unknown[], on: Queryable = this.#pool): Promise<{ rows: Row[]; rowCount: number | null }> {
    if (params.some((p) => typeof p === "string" && p.includes("\0"))) {
      if (/^\s*INSERT/i.test(text)) throw new TypeError("a text value holds a NUL character, which PostgreSQL cannot store");
      return { rows: [], rowCount: 0 };
    }
    const name = STATEMENT_NAMES.get(text);
    return on.query(name === undefined ? { text, values: params } : { name, text, values: params });
  }
}

/** Bytes as node-postgres binds a bytea (a Buffer over the same memory), or null. */
function bytea(bytes: Uint8Array | null | undefined): Buffer | null {
  return bytes == null ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A patch's JSON field as the statements bind it: undefined (kept as is), null, or its text. */
function jsonText(value: JsonObject | null | undefined): string | null | undefined {
  return value === undefined ? undefined : value === null ? null : JSON.stringify(value);
}

/** Whether an end is a run's (running or canceling to a terminal status): a claim may ride it. */
function endsRun(end: EndWrite): boolean {
  return isTerminalStatus(end.to) && end.from.every((status) => (RUN_STATUSES as readonly string[]).includes(status));
}

/**
 * Whether PG_SQL.endJobs can write these ends: no kept blobs (their bytes go in statements of
 * their own), one notification channel, each job once.
 */
function canEndInOneStatement(ends: readonly EndWrite[]): boolean {
  const channels = new Set(ends.flatMap((e) => (e.notify === undefined ? [] : [e.notify.channel])));
  return channels.size <= 1 && ends.every((e) => e.pending.length === 0) && new Set(ends.map((e) => e.id)).size === ends.length;
}

/** A refused CHECK reads as on SQLite ("CHECK constraint failed: <name>"), whichever store refused it. */
function portable(error: unknown): unknown {
  if (sqlState(error) !== PG_CHECK_VIOLATION) return error;
  return new Error(`CHECK constraint failed: ${(error as { constraint?: string }).constraint ?? "unknown"}`, { cause: error });
}

function sqlState(error: unknown): string | undefined {
  return (error as { code?: string } | null)?.code;
}
