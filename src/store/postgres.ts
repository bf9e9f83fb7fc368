// The Store on PostgreSQL, for several flowgate processes sharing one database. Every rule the
// SQLite store keeps holds here, enforced by the database rather than by one process: the
// terminal guard is a trigger, an idempotency key is claimed by one INSERT ... ON CONFLICT on its
// primary key in the job's own transaction, and every guarded move is one UPDATE ... WHERE on the
// row. A commit returns once PostgreSQL made it durable (synchronous_commit), so nothing is
// acknowledged before it is. Submissions are inserted in batches (group commit), like SQLite's.
import type pg from "pg";
import { CheckedStore } from "./checked-store.ts";
import { IdempotencyKeyReused, LeaseLostError, QueueFullError, TerminalStatusError, UnknownJobError } from "./errors.ts";
import { hasLabels, insertedJob } from "./input-checks.ts";
import { BatchedReads } from "./batched-reads.ts";
import { GroupCommit } from "./group-commit.ts";
import { inTransaction, openPostgresPool, type PostgresOptions } from "./postgres-pool.ts";
import { PG_INSERT_JOBS, PG_INSERT_JOBS_BOUNDED, PG_SQL, pgListJobsSql, pgListLabeledJobsSql, pgOffsetJobsSql } from "./postgres-queries.ts";
import { stampSnapshot } from "./postgres-positions.ts";
import { PG_QUEUE_LOCK, PG_TERMINAL_SQLSTATE } from "./postgres-schema.ts";
import { PG_ROWS, toPendingBlob, toWorkflow, type Row } from "./rows.ts";
import type { JobQuery, StoreDialect } from "./store-dialect.ts";
import { IDEMPOTENCY_TTL_MS } from "./types.ts";
import type {
  AssetDeletion,
  CreateJobOptions,
  AssetFolder,
  AssetRecord,
  IdempotencyClaim,
  IdempotencyOptions,
  JobLogs,
  JobPatch,
  JobProgress,
  JobRecord,
  JobStatus,
  JsonObject,
  NewAsset,
  NewJob,
  OffsetJobPage,
  OffsetJobsOptions,
  PendingBlob,
  PurgeResult,
  RunFence,
  Store,
  TransitionOptions,
} from "./types.ts";

const { toAsset, toClaim, toLogs } = PG_ROWS;
/** A job row as a record (the leases' claims read theirs with it). */
export const toJob = PG_ROWS.toJob;

/**
 * The store's fixed statements by text, each with a name: a named statement is parsed and
 * planned once per connection, not on every call (node-postgres prepares it on first use).
 */
const STATEMENT_NAMES = new Map(Object.entries(PG_SQL).map(([key, text]) => [text as string, `fg_${key}`]));
type Queryable = pg.Pool | pg.PoolClient;

/** A job insert waiting for the next batch. */
interface PendingInsert {
  job: NewJob;
  idempotency: IdempotencyOptions | undefined;
  queueLimit: number | undefined;
}

const PG_FOREIGN_KEY_VIOLATION = "23503";
const PG_CHECK_VIOLATION = "23514";

/** The dialect over a PostgreSQL database (one schema), through a node-postgres pool (its arguments checked by CheckedStore). */
export class PostgresStore implements StoreDialect {
  readonly #pool: pg.Pool;
  /** Submissions, batched: each batch commits once the previous one did, with whatever arrived meanwhile. */
  readonly #inserts = new GroupCommit<PendingInsert, JobRecord>((batch, batched) => insertBatchOnce(this.#pool, batch, batched));
  /** Job reads, batched: the GETs of one turn read their rows in one round trip. */
  readonly #jobReads = new BatchedReads<string, Row>((ids) => this.#readJobs(ids));
  #closed = false;

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
    const sql = pgOffsetJobsSql(byStatus, byDeployment, query.sort, query.descending);
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
    const job = await this.#transition(id, from, to, patch, this.#pool, options.fence);
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
  ): Promise<{ job: JobRecord; assets: AssetRecord[] } | null> {
    return inTransaction(this.#pool, async (client) => {
      const job = await this.#transition(id, from, to, patch, client, fence);
      if (job === null) return null;
      for (const blob of pending) await client.query(PG_SQL.keepBlob, [blob.key, Buffer.from(blob.bytes.buffer, blob.bytes.byteOffset, blob.bytes.byteLength)]);
      const added: AssetRecord[] = [];
      for (const asset of assets) added.push(await this.#insertAsset(asset, client));
      return { job, assets: added };
    });
  }

  /** The guarded UPDATE of transitionJob on `on`. */
  async #transition(
    id: string,
    fromStatuses: readonly JobStatus[],
    to: JobStatus,
    patch: JobPatch,
    on: Queryable,
    fence?: RunFence,
  ): Promise<JobRecord | null> {
    const field = (value: unknown) => [value !== undefined, value ?? null];
    const json = (value: JsonObject | null | undefined) => (value === undefined ? undefined : value === null ? null : JSON.stringify(value));
    const params = [
      id,
      to,
      fromStatuses,
      ...field(patch.started_at),
      ...field(patch.completed_at),
      ...field(json(patch.progress)),
      ...field(json(patch.error)),
      ...field(patch.cost),
      fence !== undefined,
      fence?.workerId ?? null,
      fence?.epoch ?? 0,
    ];
    try {
      const row = await this.#one(PG_SQL.transition, params, on);
      return row === undefined ? null : toJob(row);
    } catch (error) {
      if (sqlState(error) === PG_TERMINAL_SQLSTATE) throw new TerminalStatusError(id, { cause: error });
      throw portable(error);
    }
  }

  async updateProgress(id: string, progress: JobProgress | null, fence?: RunFence): Promise<boolean> {
    const json = progress === null ? null : JSON.stringify(progress);
    if (fence === undefined) return ((await this.#query(PG_SQL.updateProgress, [id, json])).rowCount ?? 0) > 0;
    if (((await this.#query(PG_SQL.updateProgressFenced, [id, json, fence.workerId, fence.epoch])).rowCount ?? 0) === 0) throw new LeaseLostError(id);
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

  async countQueued(owner?: string): Promise<number> {
    const row = owner === undefined ? await this.#one(PG_SQL.countQueued, []) : await this.#one(PG_SQL.countOwnerQueued, [owner]);
    return row!.n as number;
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

  async blobsInUse(keys: readonly string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    return new Set((await this.#query(PG_SQL.blobsInUse, [keys])).rows.map((row) => row.blob_key as string));
  }

  async blobReferenced(blobKey: string): Promise<boolean> {
    return (await this.#one(PG_SQL.blobReferenced, [blobKey])) !== undefined;
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
    await this.#inserts.flush(); // a batch still waiting for its turn commits before the pool goes
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

/** The queue's lock, then the span of the queue, read once the lock is held (each statement of a simple query takes its own snapshot). */
const LOCK_QUEUE = `SELECT pg_advisory_lock(${PG_QUEUE_LOCK}); ${PG_SQL.queuedSpan}`;
const UNLOCK_QUEUE = `SELECT pg_advisory_unlock(${PG_QUEUE_LOCK})`;

/**
 * Inserts a batch (insertJobs) on one pooled connection. Each round trip of a batch is waited for
 * by every submission of the next one, so there are few. A batch with a queue bound whose keys can
 * all be claimed at once is one statement (flowgate_insert_jobs_bounded, migration 14): the
 * queue's advisory lock, the span of the queue read once it is held, and the claims and the
 * insert, which commits by itself, releasing the lock. Only when the span leaves no certain room
 * for the batch does it take the slower path: the lock with the span, an exact count, the insert,
 * the unlock (not waited for). Either way no other process's submissions commit between the
 * read of the queue and the insert: the bound is exact across nodes. A batch whose keys are
 * claimed one by one runs in a transaction.
 */
async function insertBatchOnce(pool: pg.Pool, batch: PendingInsert[], batched: boolean): Promise<Array<PromiseSettledResult<JobRecord>>> {
  const limits = batch.flatMap((pending) => (pending.queueLimit === undefined ? [] : [pending.queueLimit]));
  const client = await pool.connect();
  let locked = false;
  let broken = false;
  try {
    if (limits.length > 0 && batched && keysClaimableAtOnce(batch)) {
      const outcomes = await insertJobs(client, batch, true, true);
      if (outcomes !== null) return outcomes;
    }
    let queued = 0;
    if (limits.length > 0) {
      locked = true; // from the asking: a failure after the grant must still unlock
      const [, span] = (await client.query(LOCK_QUEUE)) as unknown as pg.QueryResult[];
      queued = await queuedForBound(client, span!.rows[0].n as number, batch.length, limits);
    }
    if (batched && claimableAtOnce(batch, queued)) return (await insertJobs(client, batch, true, false))!;
    await client.query("BEGIN");
    try {
      const outcomes = await claimOneByOne(client, batch, batched, queued);
      const admitted = batch.filter((_, i) => outcomes[i] === null);
      const inserted = admitted.length === 0 ? [] : (await insertJobs(client, admitted, false, false))!;
      await client.query("COMMIT");
      return outcomes.map((outcome) => outcome ?? inserted.shift()!);
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {
        broken = true; // the connection itself failed: do not give it back
      });
      throw error;
    }
  } finally {
    if (!locked || broken)
      client.release(broken); // a lost connection's locks go with it
    else
      client.query(UNLOCK_QUEUE).then(
        () => client.release(),
        () => client.release(true),
      );
  }
}

/**
 * The number of queued jobs the bound is checked against, under the queue lock. Counting them
 * costs time in proportion to the queue, paid by every batch while it holds the lock (2-3 ms at
 * 10,000 jobs, 10-20 ms at 40,000): the span of their seqs, an upper bound read from the ends of
 * an index, answers instead whenever even it leaves room for the whole batch. Else they are
 * counted, up to the largest limit (a count past every limit refuses the same submissions).
 */
async function queuedForBound(client: pg.PoolClient, span: number, batchSize: number, limits: number[]): Promise<number> {
  if (span + batchSize <= Math.min(...limits)) return span;
  return (await client.query(PG_SQL.countQueuedUpTo, [Math.max(...limits)])).rows[0].n as number;
}

/**
 * Inserts the jobs of `admitted` in one statement, in their order. With `claims`, the statement
 * also claims their keys (claimableAtOnce holds), and a job whose key is taken is refused;
 * without, their keys were claimed already. With `bounded`, the statement also takes the queue's
 * lock and checks the bounds against the span of the queue (migration 14): null when that left
 * no certain room, and nothing was inserted. Outcomes in the order of `admitted`.
 */
async function insertJobs(
  client: pg.PoolClient,
  admitted: PendingInsert[],
  claims: boolean,
  bounded: boolean,
): Promise<Array<PromiseSettledResult<JobRecord>> | null> {
  const column = <T>(value: (pending: PendingInsert) => T) => admitted.map(value);
  const claimOf = (p: PendingInsert) => (claims ? p.idempotency : undefined);
  const { rows } = await client.query({
    name: bounded ? "fg_insert_jobs_bounded" : "fg_insert_jobs",
    text: bounded ? PG_INSERT_JOBS_BOUNDED : PG_INSERT_JOBS,
    values: [
      column((p) => p.job.id),
      column((p) => p.job.owner),
      column((p) => p.job.deployment_id ?? null),
      column((p) => p.job.created_at),
      column((p) => p.job.expires_at),
      column((p) => JSON.stringify(p.job.output_node_ids)),
      column((p) => p.job.cost ?? null),
      column((p) => JSON.stringify(p.job.workflow)),
      column((p) => p.job.secrets_given === true),
      column((p) => claimOf(p)?.key ?? null),
      column((p) => claimOf(p)?.now ?? null),
      column((p) => {
        const claim = claimOf(p);
        return claim === undefined ? null : claim.now + (claim.ttlMs ?? IDEMPOTENCY_TTL_MS);
      }),
      column((p) => (hasLabels(p.job.metadata) ? JSON.stringify(p.job.metadata) : null)),
      ...(bounded ? [column((p) => p.queueLimit ?? null)] : []),
    ],
  });
  if (bounded && rows.some((row) => row.id === null)) return null; // no certain room: counted on the other path
  const seqs = new Map(rows.map((row) => [row.id as string, row.seq as number]));
  const outcomes: Array<PromiseSettledResult<JobRecord>> = [];
  for (const { job, idempotency } of admitted) {
    const seq = seqs.get(job.id);
    if (seq !== undefined) {
      outcomes.push({ status: "fulfilled", value: { ...insertedJob(job), seq } });
      continue;
    }
    // Not inserted: its key was taken (only a key claimed in the statement can keep a job out).
    if (!claims || idempotency === undefined) throw new Error(`job ${job.id} was not inserted`);
    const existing = (await client.query(PG_SQL.getClaim, [job.owner, idempotency.key, idempotency.now])).rows[0];
    outcomes.push({
      status: "rejected",
      reason: new IdempotencyKeyReused(job.owner, idempotency.key, (existing?.job_id as string | null | undefined) ?? null),
    });
  }
  return outcomes;
}

/**
 * Whether a batch's keys can be claimed in the insert's statement: no submission is refused by
 * the queue bound whatever the claims decide, no claim was held beforehand, and no key comes twice.
 */
function claimableAtOnce(batch: PendingInsert[], queued: number): boolean {
  return batch.every(({ queueLimit }, i) => queueLimit === undefined || queued + i < queueLimit) && keysClaimableAtOnce(batch);
}

/** Whether a batch's keys can be claimed in the insert's statement: none was held beforehand, and none comes twice. */
function keysClaimableAtOnce(batch: PendingInsert[]): boolean {
  const keys = new Set<string>();
  for (const { job, idempotency } of batch) {
    if (idempotency === undefined) continue;
    if (idempotency.held === true) return false;
    const k = `${job.owner}\0${idempotency.key}`;
    if (keys.has(k)) return false;
    keys.add(k);
  }
  return true;
}

/** Checks the bound and claims each submission's key in turn; null for each submission admitted. */
async function claimOneByOne(
  client: pg.PoolClient,
  batch: PendingInsert[],
  batched: boolean,
  queued: number,
): Promise<Array<PromiseSettledResult<JobRecord> | null>> {
  const outcomes: Array<PromiseSettledResult<JobRecord> | null> = [];
  for (const { job, idempotency, queueLimit } of batch) {
    if (queueLimit !== undefined && queued >= queueLimit) {
      if (!batched) throw new QueueFullError(queueLimit);
      outcomes.push({ status: "rejected", reason: new QueueFullError(queueLimit) });
      continue;
    }
    if (idempotency !== undefined) {
      try {
        await claim(client, job.owner, idempotency, job.id);
      } catch (reason) {
        if (batched && reason instanceof IdempotencyKeyReused) {
          outcomes.push({ status: "rejected", reason });
          continue;
        }
        throw reason;
      }
    }
    outcomes.push(null);
    queued++;
  }
  return outcomes;
}

/** Takes or binds an idempotency claim inside the caller's transaction (input checked by CheckedStore). */
async function claim(client: pg.PoolClient, owner: string, options: IdempotencyOptions, jobId: string | null): Promise<IdempotencyClaim> {
  const { key, now } = options;
  if (options.held === true && jobId !== null) {
    const bound = (await client.query(PG_SQL.bindHeldKey, [owner, key, jobId, now])).rows[0];
    if (bound !== undefined) return toClaim(bound);
    // Not held any more (it expired): claim afresh below, refusing a live foreign claim.
  }
  const expires_at = now + (options.ttlMs ?? IDEMPOTENCY_TTL_MS);
  const taken = (await client.query(PG_SQL.claimKey, [owner, key, jobId, now, expires_at])).rows[0];
  if (taken !== undefined) return toClaim(taken);
  const existing = (await client.query(PG_SQL.getClaim, [owner, key, now])).rows[0];
  throw new IdempotencyKeyReused(owner, key, (existing?.job_id as string | null | undefined) ?? null);
}

/** A refused CHECK reads as on SQLite ("CHECK constraint failed: <name>"), whichever store refused it. */
function portable(error: unknown): unknown {
  if (sqlState(error) !== PG_CHECK_VIOLATION) return error;
  return new Error(`CHECK constraint failed: ${(error as { constraint?: string }).constraint ?? "unknown"}`, { cause: error });
}

function sqlState(error: unknown): string | undefined {
  return (error as { code?: string } | null)?.code;
}
