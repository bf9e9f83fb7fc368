// The default Store: one SQLite file under the data dir, through Node's built-in node:sqlite.
// node:sqlite is synchronous, so each call runs to completion on one connection and calls of
// one process never interleave; write transactions use BEGIN IMMEDIATE so that several
// processes on the same file serialize on the write lock (waiting up to busy_timeout).
//
// Durability without an fsync per write on the event loop: SQLite runs with synchronous=NORMAL
// (a commit is a write into the WAL file), and every write method resolves only after an fsync
// of the WAL file that began after its commit. Those fsyncs run on libuv's thread pool, start
// once the event loop's turn is over, and are shared by every write committed meanwhile (group
// commit). Job inserts are batched too: the submissions of one event-loop turn commit in one
// transaction. A write is visible to readers of this process as soon as it commits, a moment
// before it is durable; nothing is acknowledged before it is durable.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { SQLInputValue, SQLOutputValue, StatementSync } from "node:sqlite";
import { CheckedStore } from "./checked-store.ts";
import { IdempotencyKeyReused, LeaseLostError, TerminalStatusError, UnknownJobError } from "./errors.ts";
import { SQL, jobsInStatusSql, listJobsSql, offsetJobsSql, listLabeledJobsSql, transitionSql } from "./sqlite-queries.ts";
import { Checkpointer } from "./checkpointer.ts";
import { FileSync } from "./file-sync.ts";
import { GroupCommit } from "./group-commit.ts";
import { SQLITE_ROWS, jsonOrNull, toPendingBlob, toWorkflow } from "./rows.ts";
import { changedAt, hasLabels, insertedJob } from "./input-checks.ts";
import { TERMINAL_TRIGGER_MESSAGE, migrate } from "./sqlite-schema.ts";
import type { JobQuery, StoreDialect } from "./store-dialect.ts";
import { assetRecordOf, IDEMPOTENCY_TTL_MS } from "./types.ts";
import type {
  AssetDeletion,
  CreateJobOptions,
  AssetFolder,
  AssetRecord,
  IdempotencyClaim,
  IdempotencyOptions,
  JobLogs,
  JobPatch,
  JobRecord,
  JobStatus,
  JsonObject,
  NewAsset,
  NewJob,
  OffsetJobPage,
  OffsetJobsOptions,
  InlineBlob,
  PendingBlob,
  PurgeResult,
  RunFence,
  Store,
  TransitionOptions,
} from "./types.ts";

/** Options of the SQLite store. */
export interface SqliteStoreOptions {
  /** Directory of the database file (created if missing). */
  dataDir: string;
  /** File name under dataDir (default "flowgate.sqlite"); ":memory:" for a throwaway database. */
  fileName?: string;
  /** How long a write waits for another process's lock (default 5000 ms). */
  busyTimeoutMs?: number;
  /**
   * "full" (default): a committed write survives a power loss. "normal": it survives a process
   * crash but the last commits may be lost on power loss; much faster bulk writes.
   */
  synchronous?: "full" | "normal";
  /** Clock for migration bookkeeping only (default Date.now). */
  now?: () => number;
  /** How the WAL file is opened for fsyncs (default FileSync.open); tests hold fsyncs with it. */
  openWalSync?: (walPath: string) => Promise<FileSync>;
}

/** Default database file name under the data dir. */
export const SQLITE_FILE_NAME = "flowgate.sqlite";

type Params = Record<string, SQLInputValue>;
type Statements = { [K in keyof typeof SQL]: StatementSync };

/** A job insert waiting for the next batch. */
interface PendingInsert {
  /** The record as inserted, but for its seq. */
  record: JobRecord;
  /** insertJob's values, in its order. */
  values: SQLInputValue[];
  owner: string;
  idempotency: IdempotencyOptions | undefined;
}

const { toAsset, toClaim, toJob, toLogs } = SQLITE_ROWS;

/** WAL pages at which the event loop checkpoints by itself, should the checkpoint worker fall behind. */
const BACKSTOP_CHECKPOINT_PAGES = 16_000;

/** The dialect over a single SQLite database file in WAL mode (its arguments checked by CheckedStore). */
export class SqliteStore implements StoreDialect {
  readonly #db: DatabaseSync;
  readonly #sql: Statements;
  readonly #variants = new Map<string, StatementSync>();
  /** fsyncs the WAL file for "full" durability; null for "normal" and in-memory databases. */
  readonly #walSync: FileSync | null;
  /** Checkpoints the WAL off the event loop; null in memory. */
  readonly #checkpointer: Checkpointer | null;
  /**
   * Job inserts, batched: a reused idempotency key writes nothing and fails only its own
   * submission; any other failure rolls the batch back and retries its jobs one transaction each.
   */
  readonly #inserts = new GroupCommit<PendingInsert, JobRecord>((batch, batched) =>
    this.#transaction(() => batch.map((pending) => this.#insertOne(pending, batched))),
  );

  private constructor(db: DatabaseSync, walSync: FileSync | null, checkpointer: Checkpointer | null) {
    this.#db = db;
    this.#walSync = walSync;
    this.#checkpointer = checkpointer;
    this.#sql = Object.fromEntries(Object.entries(SQL).map(([name, text]) => [name, db.prepare(text)])) as Statements;
  }

  /** Opens (creating and migrating as needed) the database under options.dataDir, as a checked Store. */
  static async open(options: SqliteStoreOptions): Promise<Store> {
    const fileName = options.fileName ?? SQLITE_FILE_NAME;
    const inMemory = fileName === ":memory:";
    if (!inMemory) await mkdir(options.dataDir, { recursive: true });
    const db = new DatabaseSync(inMemory ? ":memory:" : join(options.dataDir, fileName), {
      timeout: options.busyTimeoutMs ?? 5000,
      enableForeignKeyConstraints: true,
      defensive: true,
    });
    let walSync: FileSync | null = null;
    try {
      if (!inMemory) db.exec("PRAGMA journal_mode = WAL");
      // NORMAL in WAL mode: commits skip the fsync, checkpoints still sync; #walSync adds the rest.
      db.exec("PRAGMA synchronous = NORMAL");
      db.exec("PRAGMA cache_size = -8000"); // 8 MB of page cache keeps hot indexes in memory
      migrate(db, (options.now ?? Date.now)());
      // The WAL file exists from the first access in WAL mode (migrate read the schema version).
      walSync = inMemory || options.synchronous === "normal" ? null : await (options.openWalSync ?? FileSync.open)(`${db.location()}-wal`);
      let checkpointer: Checkpointer | null = null;
      if (!inMemory) {
        // Automatic checkpoints stay on as a safety net, at a size the worker never lets the WAL reach.
        db.exec(`PRAGMA wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
        checkpointer = Checkpointer.start({
          path: db.location()!,
          busyTimeoutMs: options.busyTimeoutMs ?? 5000,
          onFailure: () => {
            if (db.isOpen) db.exec("PRAGMA wal_autocheckpoint = 1000");
          },
        });
      }
      return new CheckedStore(new SqliteStore(db, walSync, checkpointer));
    } catch (error) {
      await walSync?.close().catch(() => undefined);
      db.close();
      throw error;
    }
  }

  async createJob(job: NewJob, options: CreateJobOptions = {}): Promise<JobRecord> {
    const values: SQLInputValue[] = [
      job.id,
      job.owner,
      job.deployment_id ?? null,
      job.created_at,
      job.expires_at,
      JSON.stringify(job.output_node_ids),
      job.cost ?? null,
      JSON.stringify(job.workflow),
      job.secrets_given === true ? 1 : 0,
      hasLabels(job.metadata) ? JSON.stringify(job.metadata) : null,
      job.workflow_id ?? null,
    ];
    const committed = await this.#inserts.submit({ record: insertedJob(job), values, owner: job.owner, idempotency: options.idempotency });
    options.onCommitted?.(committed);
    return this.#durable(committed);
  }

  async claimIdempotencyKey(owner: string, key: string, now: number, ttlMs?: number): Promise<IdempotencyClaim> {
    return this.#durable(this.#transaction(() => this.#claim(owner, ttlMs === undefined ? { key, now } : { key, now, ttlMs }, null)));
  }

  async releaseIdempotencyKey(owner: string, key: string): Promise<boolean> {
    return this.#durable(this.#sql.releaseKey.run({ owner, key }).changes > 0);
  }

  async getIdempotencyClaim(owner: string, key: string, now: number): Promise<IdempotencyClaim | null> {
    const row = this.#sql.getClaim.get({ owner, key, now });
    return row === undefined ? null : toClaim(row);
  }

  async getJob(id: string): Promise<JobRecord | null> {
    const row = this.#sql.getJob.get({ id });
    return row === undefined ? null : toJob(row);
  }

  async getJobWorkflow(id: string): Promise<JsonObject | null> {
    const row = this.#sql.getWorkflow.get({ id });
    return row === undefined ? null : toWorkflow(row);
  }

  async getJobLogs(id: string): Promise<JobLogs | null> {
    const row = this.#sql.getLogs.get({ id });
    return row === undefined ? null : toLogs(row);
  }

  async listJobs(owner: string, query: JobQuery): Promise<JobRecord[]> {
    const { statuses, labels, in_history: inHistory } = query;
    const byDeployment = query.deployment_id !== undefined;
    const statusCount = statuses?.length ?? 0;
    const statement =
      labels === null
        ? this.#variant(`list:${statusCount}:${byDeployment}:${inHistory}`, () => listJobsSql(statusCount, byDeployment, inHistory))
        : this.#variant(`labeled:${labels.length}:${statusCount}:${byDeployment}:${inHistory}`, () =>
            listLabeledJobsSql(labels.length, statusCount, byDeployment, inHistory),
          );
    const params: Params = { owner, before: query.before, limit: query.fetch, ...bindList("s", statuses ?? []) };
    labels?.forEach(([key, value], i) => {
      params[`k${i}`] = key;
      params[`v${i}`] = value;
    });
    if (byDeployment) params.deployment_id = query.deployment_id!;
    return statement.all(params).map(toJob);
  }

  async listJobsAtOffset(owner: string, query: OffsetJobsOptions): Promise<OffsetJobPage> {
    const statusCount = query.status?.length ?? 0;
    const byDeployment = query.deployment_id !== undefined;
    const byWorkflow = query.workflow_id !== undefined;
    const shape = `${statusCount}:${byDeployment}:${query.sort}:${query.descending}:${byWorkflow}`;
    const params: Params = { owner, now: query.now, ...bindList("s", query.status ?? []) };
    if (byDeployment) params.deployment_id = query.deployment_id!;
    if (byWorkflow) params.workflow_id = query.workflow_id!;
    const page = this.#variant(`offset:${shape}`, () => offsetJobsSql(statusCount, byDeployment, query.sort, query.descending, false, byWorkflow));
    const count = this.#variant(`offset-count:${shape}`, () => offsetJobsSql(statusCount, byDeployment, query.sort, query.descending, true, byWorkflow));
    // Both reads run in one synchronous step, so no write of this process comes between them.
    const jobs = page.all({ ...params, limit: query.limit, offset: query.offset }).map(toJob);
    return { jobs, total: count.get(params)!.n as number };
  }

  async hideFromHistory(owner: string, ids: readonly string[] | null): Promise<number> {
    if (ids === null) return this.#durable(Number(this.#sql.hideHistory.run({ owner }).changes));
    const changed = this.#transaction(() => ids.reduce((n, id) => n + Number(this.#sql.hideHistoryItem.run({ id, owner }).changes), 0));
    return this.#durable(changed);
  }

  async hiddenFromHistory(id: string): Promise<boolean> {
    return this.#sql.historyHidden.get({ id })?.history_hidden === 1;
  }

  async transitionJob(id: string, from: readonly JobStatus[], to: JobStatus, patch: JobPatch = {}, options: TransitionOptions = {}): Promise<JobRecord | null> {
    const row = this.#transition(id, from, to, patch);
    const job = row === undefined ? null : toJob(row);
    options.onCommitted?.(job);
    return job === null ? null : this.#durable(job);
  }

  /** One process owns the queue: its claims are moves in memory, with nothing to ride. */
  carryClaims(): boolean {
    return false;
  }

  async transitionJobWithAssets(
    id: string,
    from: readonly JobStatus[],
    to: JobStatus,
    patch: JobPatch,
    assets: readonly NewAsset[],
    pending: readonly PendingBlob[] = [],
  ): Promise<{ job: JobRecord; assets: AssetRecord[] } | null> {
    const done = this.#transaction(() => {
      const row = this.#transition(id, from, to, patch);
      if (row === undefined) return null;
      for (const blob of pending) this.#sql.keepBlob.run({ blob_key: blob.key, bytes: blob.bytes });
      return { job: toJob(row), assets: assets.map((asset) => this.#insertAsset(asset)) };
    });
    return done === null ? null : this.#durable(done);
  }

  /** The guarded UPDATE of transitionJob; the row written, or undefined when the job is not in `from`. */
  #transition(id: string, fromStatuses: readonly JobStatus[], to: JobStatus, patch: JobPatch): Record<string, SQLOutputValue> | undefined {
    const statement = this.#variant(`transition:${fromStatuses.length}`, () => transitionSql(fromStatuses.length));
    const params: Params = {
      id,
      to,
      ...bindList("f", fromStatuses),
      ...bindPatchField("started_at", patch.started_at),
      ...bindPatchField("completed_at", patch.completed_at),
      ...bindPatchField("progress", patch.progress === undefined ? undefined : jsonOrNull(patch.progress)),
      ...bindPatchField("error", patch.error === undefined ? undefined : jsonOrNull(patch.error)),
      ...bindPatchField("cost", patch.cost),
      updated_at: changedAt(patch),
    };
    try {
      return writeReturning(statement, params);
    } catch (error) {
      throw mapTerminal(error, id);
    }
  }

  async updateProgress(id: string, progress: JsonObject | null, fence?: RunFence): Promise<boolean> {
    // No fsync to wait for (see Store.updateProgress): the next durable write's covers it.
    const changed = this.#sql.updateProgress.run({ id, progress: jsonOrNull(progress) }).changes > 0;
    if (!changed && fence !== undefined) throw new LeaseLostError(id);
    return changed;
  }

  async setLogs(id: string, logs: JobLogs | null, fence?: RunFence): Promise<boolean> {
    // One process: a fence is the job still live (no other worker can hold it).
    if (fence !== undefined) this.#assertLive(id);
    const params: Params =
      logs === null
        ? { id, text: null, truncated: null, captured_at: null }
        : { id, text: logs.text, truncated: logs.truncated ? 1 : 0, captured_at: logs.captured_at };
    return this.#durable(this.#sql.setLogs.run(params).changes > 0);
  }

  /** LeaseLostError unless the job is running or canceling (checked and written in one synchronous step). */
  #assertLive(id: string): void {
    const status = this.#sql.getJob.get({ id })?.status;
    if (status !== "running" && status !== "canceling") throw new LeaseLostError(id);
  }

  async queuedJobs(limit: number, afterSeq: number, owner: string | undefined): Promise<JobRecord[]> {
    const rows = owner === undefined ? this.#sql.queuedJobs.all({ after: afterSeq, limit }) : this.#sql.ownerQueuedJobs.all({ owner, after: afterSeq, limit });
    return rows.map(toJob);
  }

  async queuedJobsWithSecrets(): Promise<string[]> {
    return this.#sql.queuedWithSecrets.all().map((row) => row.id as string);
  }

  async countQueued(): Promise<number> {
    return this.#sql.countQueued.get()!.n as number;
  }

  async countLive(owner: string): Promise<number> {
    return this.#sql.countOwnerLive.get({ owner })!.n as number;
  }

  async jobsInStatus(statuses: readonly JobStatus[]): Promise<JobRecord[]> {
    const statement = this.#variant(`in-status:${statuses.length}`, () => jobsInStatusSql(statuses.length));
    return statement.all(bindList("s", statuses)).map(toJob);
  }

  async addAsset(asset: NewAsset, fence?: RunFence): Promise<AssetRecord> {
    if (fence !== undefined && asset.job_id != null) this.#assertLive(asset.job_id);
    // Inline bytes and their record commit together.
    return this.#durable(asset.inline == null ? this.#insertAsset(asset) : this.#transaction(() => this.#insertAsset(asset)));
  }

  /** Inserts one checked asset record (in the caller's transaction, if any). */
  #insertAsset(asset: NewAsset): AssetRecord {
    const jobId = asset.job_id ?? null;
    try {
      const record = assetRecordOf(asset);
      if (asset.inline != null) this.#sql.keepInline.run({ blob_key: record.blob_key, bytes: asset.inline, touched_at: record.created_at });
      const row = writeReturning(this.#sql.insertAsset, { ...record, tags: JSON.stringify(record.tags) });
      return toAsset(row!);
    } catch (error) {
      if (jobId !== null && sqliteErrcode(error) === SQLITE_CONSTRAINT_FOREIGNKEY) throw new UnknownJobError(jobId, { cause: error });
      throw error;
    }
  }

  async getAsset(id: string): Promise<AssetRecord | null> {
    const row = this.#sql.getAsset.get({ id });
    return row === undefined ? null : toAsset(row);
  }

  async listJobOutputs(jobId: string): Promise<AssetRecord[]> {
    return this.#sql.listJobOutputs.all({ job_id: jobId }).map(toAsset);
  }

  async listOutputsOfJobs(jobIds: readonly string[]): Promise<AssetRecord[]> {
    return this.#sql.listOutputsOfJobs.all({ ids: JSON.stringify(jobIds) }).map(toAsset);
  }

  async deleteAsset(id: string): Promise<AssetDeletion | null> {
    return this.#durable(
      this.#transaction(() => {
        const row = this.#sql.deleteAsset.get({ id });
        if (row === undefined) return null;
        const blob_key = row.blob_key as string;
        return { blob_key, blob_unreferenced: !this.#referenced(blob_key) };
      }),
    );
  }

  async findAssetByBlob(owner: string, blobKey: string): Promise<AssetRecord | null> {
    const row = this.#sql.findAssetByBlob.get({ owner, blob_key: blobKey });
    return row === undefined ? null : toAsset(row);
  }

  async findAssetByName(owner: string, name: string, folder?: AssetFolder): Promise<AssetRecord | null> {
    const row = this.#sql.findAssetByName.get({ owner, name, folder: folder ?? null });
    return row === undefined ? null : toAsset(row);
  }

  async allotOutputNames(owner: string, folder: AssetFolder, prefix: string, ext: string, count: number): Promise<number> {
    // No fsync to wait for: a record named from the block commits after it.
    const params = { owner, folder, prefix, ext, count };
    const row = this.#sql.bumpOutputNames.get(params) ?? this.#sql.startOutputNames.get(params);
    return Number(row!.first);
  }

  async takeTurn(task: string, everyMs: number, now: number): Promise<boolean> {
    return this.#sql.takeTurn.get({ task, every: everyMs, now }) !== undefined;
  }

  async blobsInUse(keys: readonly string[]): Promise<Set<string>> {
    const used = new Set<string>();
    for (const blob_key of keys) {
      if (this.#sql.blobReferenced.get({ blob_key }) !== undefined || this.#sql.blobKept.get({ blob_key }) !== undefined) used.add(blob_key);
    }
    return used;
  }

  async blobReferenced(blobKey: string): Promise<boolean> {
    return this.#referenced(blobKey);
  }

  async inlineBlob(key: string): Promise<InlineBlob | null> {
    const row = this.#sql.inlineBlob.get({ blob_key: key });
    return row === undefined ? null : { bytes: row.bytes as Uint8Array, touched_at: Number(row.touched_at) };
  }

  async inlineBlobKeys(afterKey: string, limit: number): Promise<string[]> {
    return this.#sql.inlineBlobKeys.all({ after: afterKey, limit }).map((row) => String(row.blob_key));
  }

  async dropInlineBlob(key: string, unlessTouchedAfter: number): Promise<boolean> {
    // No fsync to wait for: a row a crash brings back is only swept again.
    return Number(this.#sql.dropInline.run({ blob_key: key, before: unlessTouchedAfter }).changes) > 0;
  }

  async pendingBlobs(afterKey: string, limit: number): Promise<PendingBlob[]> {
    return this.#sql.pendingBlobs.all({ after: afterKey, limit }).map(toPendingBlob);
  }

  async dropPendingBlobs(keys: readonly string[]): Promise<void> {
    // No fsync to wait for: a row a crash brings back is only written back again.
    if (keys.length > 0)
      this.#transaction(() => {
        for (const key of keys) this.#sql.dropBlob.run({ blob_key: key });
      });
  }

  async expireJobs(now: number, limit: number): Promise<JobRecord[]> {
    return this.#durable(
      this.#sql.expireJobs
        .all({ now, limit })
        .map(toJob)
        .sort((a, b) => a.seq - b.seq),
    );
  }

  async purgeExpired(now: number, cutoff: number, limit: number): Promise<PurgeResult> {
    const result = this.#transaction(() => {
      const job_ids = this.#sql.purgeableJobs.all({ cutoff, limit }).map((row) => row.id as string);
      const asset_ids: string[] = [];
      const candidates = new Set<string>();
      const collect = (row: Record<string, unknown>) => {
        asset_ids.push(row.id as string);
        candidates.add(row.blob_key as string);
      };
      for (const id of job_ids) {
        this.#sql.deleteJobAssets.all({ job_id: id }).forEach(collect);
        this.#sql.deleteJob.run({ id });
      }
      const uploads = this.#sql.deleteExpiredUploads.all({ cutoff, limit });
      uploads.forEach(collect);
      const claims = this.#sql.deleteExpiredClaims.run({ now, limit }).changes;
      const unreferenced_blob_keys = [...candidates].filter((key) => !this.#referenced(key));
      const more = job_ids.length === limit || uploads.length === limit || claims === limit;
      return { job_ids, asset_ids, unreferenced_blob_keys, more };
    });
    return this.#durable(result);
  }

  async check(): Promise<void> {
    const failure = this.#walSync?.failure;
    if (failure) throw failure.error;
    this.#sql.countQueued.get();
  }

  async close(): Promise<void> {
    if (!this.#db.isOpen) return;
    await this.#inserts.flush(); // a batch still waiting for its turn commits before the connection goes
    await new Promise((resolve) => setImmediate(resolve)); // its callers ask for their fsync first
    await this.#walSync?.close();
    await this.#checkpointer?.stop();
    this.#db.exec("PRAGMA optimize");
    this.#db.close();
  }

  /** Resolves with `value` once every write committed so far is on stable storage. */
  async #durable<T>(value: T): Promise<T> {
    await this.#walSync?.sync();
    return value;
  }

  /** Claims the key (a refused claim writes nothing) and inserts the job, inside the caller's transaction. */
  #insertOne({ record, values, owner, idempotency }: PendingInsert, batched: boolean): PromiseSettledResult<JobRecord> {
    if (idempotency !== undefined) {
      try {
        this.#claim(owner, idempotency, record.id);
      } catch (reason) {
        if (batched && reason instanceof IdempotencyKeyReused) return { status: "rejected", reason };
        throw reason;
      }
    }
    const { lastInsertRowid } = this.#sql.insertJob.run(...values);
    const seq = Number(lastInsertRowid);
    for (const [key, value] of Object.entries(record.metadata)) this.#sql.insertLabel.run(owner, key, value, seq);
    return { status: "fulfilled", value: { ...record, seq } };
  }

  /** Takes or binds an idempotency claim inside the caller's transaction. */
  #claim(owner: string, options: IdempotencyOptions, jobId: string | null): IdempotencyClaim {
    const { key, now } = options;
    const ttlMs = options.ttlMs ?? IDEMPOTENCY_TTL_MS;
    if (options.held === true && jobId !== null) {
      const bound = this.#sql.bindHeldKey.get({ owner, key, job_id: jobId, now });
      if (bound !== undefined) return toClaim(bound);
      // Not held any more (it expired): fall through and claim afresh, refusing a live foreign claim.
    }
    const expires_at = now + ttlMs;
    if (this.#sql.claimKey.run(owner, key, jobId, now, expires_at).changes > 0) return { owner, key, job_id: jobId, claimed_at: now, expires_at };
    const existing = this.#sql.getClaim.get({ owner, key, now });
    throw new IdempotencyKeyReused(owner, key, (existing?.job_id as string | null | undefined) ?? null);
  }

  #referenced(blobKey: string): boolean {
    return this.#sql.blobReferenced.get({ blob_key: blobKey }) !== undefined;
  }

  #variant(name: string, build: () => string): StatementSync {
    let statement = this.#variants.get(name);
    if (statement === undefined) {
      statement = this.#db.prepare(build());
      this.#variants.set(name, statement);
    }
    return statement;
  }

  #transaction<T>(work: () => T): T {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const result = work();
      this.#db.exec("COMMIT");
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }
}

const SQLITE_CONSTRAINT_FOREIGNKEY = 787;

/**
 * Runs a one-row write with RETURNING outside a transaction. Never `.get()`: it resets the
 * statement after the first row, and node:sqlite drops an error of that reset, which is where
 * the autocommit COMMIT fails (SQLITE_FULL on a full disk): the row would come back as written
 * while the database rolled it back. `.all()` runs the statement to its end and throws.
 */
function writeReturning(statement: StatementSync, params: Params): Record<string, SQLOutputValue> | undefined {
  return statement.all(params)[0];
}

function sqliteErrcode(error: unknown): number | undefined {
  return (error as { errcode?: number } | null)?.errcode;
}

function mapTerminal(error: unknown, jobId: string): unknown {
  return error instanceof Error && error.message.includes(TERMINAL_TRIGGER_MESSAGE) ? new TerminalStatusError(jobId, { cause: error }) : error;
}

/** `{set_<name>: 0|1, <name>: value}`: a CASE in the UPDATE keeps the column when the flag is 0. */
function bindPatchField(name: string, value: SQLInputValue | undefined): Params {
  return value === undefined ? { [`set_${name}`]: 0, [name]: null } : { [`set_${name}`]: 1, [name]: value };
}

function bindList(prefix: string, values: readonly string[]): Params {
  const params: Params = {};
  for (const [i, value] of values.entries()) params[`${prefix}${i}`] = value;
  return params;
}
