// The admission of a batch of submissions on PostgreSQL, where several processes insert into one
// queue: each batch is checked against the queue bound under the queue's advisory lock and its
// idempotency keys claimed, in as few round trips as the batch allows, so that the bound is exact
// across nodes. PostgresStore hands its group commit's batches here.
import type pg from "pg";
import { IdempotencyKeyReused, QueueFullError } from "./errors.ts";
import { hasLabels, insertedJob } from "./input-checks.ts";
import { PG_INSERT_JOBS, PG_INSERT_JOBS_BOUNDED, PG_SQL } from "./postgres-queries.ts";
import { PG_QUEUE_LOCK } from "./postgres-schema.ts";
import { PG_ROWS } from "./rows.ts";
import { IDEMPOTENCY_TTL_MS, type IdempotencyClaim, type IdempotencyOptions, type JobRecord, type NewJob } from "./types.ts";

const { toClaim } = PG_ROWS;

/** A job insert waiting for the next batch. */
export interface PendingInsert {
  job: NewJob;
  idempotency: IdempotencyOptions | undefined;
  queueLimit: number | undefined;
}

/** The queue's lock, then the span of the queue, read once the lock is held (each statement of a simple query takes its own snapshot). */
const LOCK_QUEUE = `SELECT pg_advisory_lock(${PG_QUEUE_LOCK}); ${PG_SQL.queuedSpan}`;
const UNLOCK_QUEUE = `SELECT pg_advisory_unlock(${PG_QUEUE_LOCK})`;

/**
 * Inserts a batch (insertJobs) on one pooled connection. Each round trip of a batch is waited for
 * by every submission of the next one, so there are few. A batch with a queue bound whose keys can
 * all be claimed at once is one statement (flowgate_insert_jobs_bounded, migrations 14 and 15): the
 * queue's advisory lock, the span of the queue read once it is held, and the claims and the
 * insert, which commits by itself, releasing the lock. Only when the span leaves no certain room
 * for the batch does it take the slower path: the lock with the span, an exact count, the insert,
 * the unlock (not waited for). Either way no other process's submissions commit between the
 * read of the queue and the insert: the bound is exact across nodes. A batch whose keys are
 * claimed one by one runs in a transaction.
 */
export async function insertBatchOnce(pool: pg.Pool, batch: PendingInsert[], batched: boolean): Promise<Array<PromiseSettledResult<JobRecord>>> {
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
      column((p) => p.job.workflow_id ?? null),
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
export async function claim(client: pg.PoolClient, owner: string, options: IdempotencyOptions, jobId: string | null): Promise<IdempotencyClaim> {
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
