// Every SQL statement of the PostgreSQL store. Positional parameters ($1...); status sets bind as
// one text[] (`= ANY($n)`), so one statement serves every set. Each guarded UPDATE and DELETE
// repeats its condition on the outer row: under READ COMMITTED a row changed meanwhile by another
// transaction is re-checked against the outer WHERE only, never against a subquery.

import {
  ASSET_COLUMNS,
  CLAIM_COLUMNS,
  JOB_COLUMN_NAMES,
  JOB_COLUMNS,
  LIVE_SQL as LIVE,
  RUN_SQL,
  RUN_STATUSES,
  TERMINAL_SQL as TERMINAL,
  qualifiedJobColumns,
} from "./sql-fragments.ts";

/** A run's fence on a job row: with leases ($worker not null), its worker and claim epoch. */
function fence(worker: number, epoch: number): string {
  return `($${worker}::text IS NULL OR (worker_id = $${worker}::text AND lease_epoch = $${epoch}::bigint))`;
}

/**
 * `unnest` of array parameters whose lengths the planner cannot see (each a scalar subquery): a
 * call's plan is then costed as the generic one is, so a named statement settles on its generic
 * plan after five calls. With the true lengths (a batch of one or two), every call's own plan
 * looks cheaper than the generic one, which assumes ten, and the statement is planned again on
 * every call: for the batched ends, more of the database's time than running them. `types`: the
 * arrays' element types, space-separated, of the parameters from $`first` on.
 */
function unnestUnseen(first: number, types: string): string {
  return `unnest(${types
    .split(" ")
    .map((type, i) => `(SELECT $${first + i}::${type}[])`)
    .join(", ")})`;
}

/**
 * The notification payloads of parameter $`n` (payloadsParam: joined by the record separator,
 * which JSON never holds raw). A text[] literal made node-postgres escape each quote of each
 * payload (JSON) character by character, a copy per pass, for every event a run sends; a split
 * costs neither side that. Its length is hidden from the planner as unnestUnseen's are.
 */
function payloadRows(n: number): string {
  return `unnest(${payloadArray(n)})`;
}

/** The payloads of parameter $`n` as a text[] (payloadRows' split, for an unnest beside other arrays). */
function payloadArray(n: number): string {
  return `string_to_array((SELECT $${n}::text), chr(30))`;
}

/** Notification payloads as the parameter payloadRows reads. */
export function payloadsParam(payloads: readonly string[]): string {
  for (const payload of payloads) if (payload.includes(PAYLOAD_SEPARATOR)) throw new Error("a notification payload holds the record separator");
  return payloads.join(PAYLOAD_SEPARATOR);
}

/** U+001E, chr(30) in payloadRows. */
const PAYLOAD_SEPARATOR = "\u001e";

/**
 * The insert of inline bytes (NewAsset.inline) a record's statement makes: a row already there is
 * touched (its lock orders the write against dropInlineBlob's).
 */
const KEEP_INLINE = "INSERT INTO inline_blobs (blob_key, bytes, touched_at)";
const ON_INLINE_CONFLICT = "ON CONFLICT (blob_key) DO UPDATE SET touched_at = GREATEST(inline_blobs.touched_at, EXCLUDED.touched_at)";

/**
 * The position snapshot's stamp as read beside a job row `s` (null columns: no snapshot, or the
 * job is not queued): its version, its age and how long taking it took, by the database's clock.
 */
const SNAPSHOT_STAMP =
  "s.version AS snapshot_version, (extract(epoch from clock_timestamp()) * 1000)::bigint - s.taken_at AS snapshot_age_ms, s.took_ms AS snapshot_took_ms";

/**
 * The common table expressions of the runs' ends' statement (PG_SQL.endJobs, its parameters),
 * ending in `moved` (the ends' rows, with `ord`), `added` and `kept`.
 */
const END_CTES = `fg_notified AS MATERIALIZED (SELECT count(pg_notify($18, p)) AS c FROM ${payloadRows(19)} AS p),
    fg_then AS MATERIALIZED (SELECT t.e, t.p FROM unnest((SELECT $20::int[]), ${payloadArray(21)}) AS t(e, p)),
    v AS (SELECT * FROM ${unnestUnseen(1, "text text text boolean bigint boolean bigint boolean text boolean text boolean float8 boolean text bigint bigint")} WITH ORDINALITY AS v(id, to_status, from_list, s_set, s_val, c_set, c_val, p_set, p_val,
        e_set, e_val, k_set, k_val, fenced, worker, epoch, changed_at, ord)),
    moved AS (UPDATE jobs SET status = v.to_status,
        started_at = CASE WHEN v.s_set THEN v.s_val ELSE jobs.started_at END,
        completed_at = CASE WHEN v.c_set THEN v.c_val ELSE jobs.completed_at END,
        progress = CASE WHEN v.p_set THEN v.p_val::json ELSE jobs.progress END,
        error = CASE WHEN v.e_set THEN v.e_val::json ELSE jobs.error END,
        cost = CASE WHEN v.k_set THEN v.k_val ELSE jobs.cost END,
        updated_at = GREATEST(COALESCE(jobs.updated_at, jobs.created_at), v.changed_at)
      FROM v WHERE (SELECT c FROM fg_notified) >= 0 AND jobs.id = v.id AND jobs.status = ANY(string_to_array(v.from_list, ','))
        AND (v.fenced IS NOT TRUE OR v.worker IS NULL OR (jobs.worker_id = v.worker AND jobs.lease_epoch = v.epoch))
      RETURNING ${qualifiedJobColumns("jobs")}, v.ord),
    added AS (INSERT INTO assets (${ASSET_COLUMNS})
      SELECT a.id, a.owner, a.job_id, a.node_id, a.name, a.type, a.content_type, a.size_bytes, a.hash, a.blob_key, a.folder,
          a.file_path, a.tags::json, a.created_at, COALESCE(a.expires_at, m.expires_at)
        FROM ${unnestUnseen(22, "text text text text text text text bigint text text text text text bigint bigint int")} WITH ORDINALITY
          AS a(id, owner, job_id, node_id, name, type, content_type, size_bytes, hash, blob_key, folder, file_path, tags, created_at,
            expires_at, end_ord, n)
        JOIN moved m ON m.ord = a.end_ord ORDER BY a.n),
    kept AS (${KEEP_INLINE} SELECT DISTINCT ON (b.blob_key) b.blob_key, b.bytes, b.created_at
        FROM unnest((SELECT $31::text[]), (SELECT $38::bytea[]), (SELECT $35::bigint[]), (SELECT $37::int[])) AS b(blob_key, bytes, created_at, end_ord)
        JOIN moved m ON m.ord = b.end_ord WHERE b.bytes IS NOT NULL ORDER BY b.blob_key, b.created_at DESC ${ON_INLINE_CONFLICT})`;
/** For a row of `moved`: the payloads sent only because that end moved (PG_SQL.endJobs's $20, $21). */
const END_THEN = "(SELECT count(pg_notify($18, t.p)) FROM fg_then t WHERE t.e = moved.ord)";

export const PG_SQL = {
  // A free key or a dead claim is taken in one statement; a live one yields no row. Two
  // transactions racing on one key serialize on its unique index: the second sees the first's row.
  // $1 owner, $2 key, $3 job_id, $4 now, $5 expires_at.
  claimKey: `INSERT INTO idempotency_keys (owner, key, job_id, claimed_at, expires_at) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (owner, key) DO UPDATE
      SET job_id = excluded.job_id, claimed_at = excluded.claimed_at, expires_at = excluded.expires_at
      WHERE idempotency_keys.expires_at <= $4
    RETURNING ${CLAIM_COLUMNS}`,
  // $1 owner, $2 key, $3 job_id, $4 now.
  bindHeldKey: `UPDATE idempotency_keys SET job_id = $3
    WHERE owner = $1 AND key = $2 AND job_id IS NULL AND expires_at > $4 RETURNING ${CLAIM_COLUMNS}`,
  getClaim: `SELECT ${CLAIM_COLUMNS} FROM idempotency_keys WHERE owner = $1 AND key = $2 AND expires_at > $3`,
  releaseKey: "DELETE FROM idempotency_keys WHERE owner = $1 AND key = $2 AND job_id IS NULL",

  // With a queued job, the stamp of the queue's position snapshot (its version, age and cost) in
  // the same read: a GET places the job without a second round trip (src/store/postgres-positions.ts).
  getJob: `SELECT ${JOB_COLUMNS.replace(/\b(\w+)\b/g, "j.$1")}, ${SNAPSHOT_STAMP}
    FROM jobs j LEFT JOIN queue_snapshot s ON s.id = 1 AND j.status = 'queued' WHERE j.id = $1`,
  // The same read of several jobs at once ($1 their ids): the reads of one turn (BatchedReads).
  getJobs: `SELECT ${JOB_COLUMNS.replace(/\b(\w+)\b/g, "j.$1")}, ${SNAPSHOT_STAMP}
    FROM jobs j LEFT JOIN queue_snapshot s ON s.id = 1 AND j.status = 'queued' WHERE j.id = ANY($1::text[])`,
  getWorkflow: "SELECT workflow::text AS workflow FROM jobs WHERE id = $1",
  getLogs: "SELECT logs_text, logs_truncated, logs_captured_at FROM jobs WHERE id = $1",
  updateProgress: `UPDATE jobs SET progress = $2::json WHERE id = $1 AND status IN ${RUN_SQL}`,
  // $3 worker (null: no leases), $4 epoch: the run's fence (RunFence).
  updateProgressFenced: `UPDATE jobs SET progress = $2::json WHERE id = $1 AND status IN ${RUN_SQL} AND ${fence(3, 4)}`,
  setLogs: "UPDATE jobs SET logs_text = $2, logs_truncated = $3, logs_captured_at = $4 WHERE id = $1",
  setLogsFenced: `UPDATE jobs SET logs_text = $2, logs_truncated = $3, logs_captured_at = $4
    WHERE id = $1 AND status IN ${RUN_SQL} AND ${fence(5, 6)}`,
  // A fenced output record first share-locks its job while the fence holds: an end or a lease
  // failure that commits meanwhile waits for the record, or the record sees the job gone.
  lockFence: `SELECT 1 AS held FROM jobs WHERE id = $1 AND status IN ${RUN_SQL} AND ${fence(2, 3)} FOR SHARE`,
  // $1 id, $2 to, $3 from[], then (flag, value) per patch field: the column keeps its value when the flag is false;
  // $17 the time of the move (updated_at never goes back).
  transition: `UPDATE jobs SET status = $2,
      started_at = CASE WHEN $4::boolean THEN $5::bigint ELSE started_at END,
      completed_at = CASE WHEN $6::boolean THEN $7::bigint ELSE completed_at END,
      progress = CASE WHEN $8::boolean THEN $9::json ELSE progress END,
      error = CASE WHEN $10::boolean THEN $11::json ELSE error END,
      cost = CASE WHEN $12::boolean THEN $13::float8 ELSE cost END,
      updated_at = GREATEST(COALESCE(updated_at, created_at), $17::bigint)
    WHERE id = $1 AND status = ANY($3::text[]) AND ($14::boolean IS NOT TRUE OR ${fence(15, 16)})
    RETURNING ${JOB_COLUMNS}`,

  // Runs' ends with their records, a batch in one statement (one round trip, one commit): per end
  // ($1-$17 as arrays, one element an end, in the order of `transition`'s parameters; the from
  // statuses comma-joined) the guarded, fenced move; $18 the channel, $19 every end's payloads
  // (sent first, whether or not anything moves), $20/$21 the payloads sent only when that end
  // (1-based, $20's element) moved, with the move's row (payloads as payloadsParam); $22-$36 the
  // records (insertAsset's columns, an expires_at null for the job's) and $37 the end each belongs
  // to, inserted only for ends that moved, in their order; $38 each record's inline bytes or null
  // (kept as insertAsset keeps them). A refused move returns no row and writes none of its records.
  endJobs: `WITH ${END_CTES}
  SELECT moved.*, ${END_THEN} AS fg_then
    FROM moved ORDER BY moved.ord`,

  queuedJobs: `SELECT ${JOB_COLUMNS} FROM jobs WHERE status = 'queued' AND seq > $1 ORDER BY seq LIMIT $2`,
  ownerQueuedJobs: `SELECT ${JOB_COLUMNS} FROM jobs WHERE owner = $3 AND status = 'queued' AND seq > $1 ORDER BY seq LIMIT $2`,
  countQueued: "SELECT count(*) AS n FROM jobs WHERE status = 'queued'",
  // At least the number of queued jobs (seqs are distinct): from the two ends of jobs_status_seq,
  // so it costs the same however long the queue; 0 when none is queued.
  queuedSpan: "SELECT COALESCE(max(seq) - min(seq) + 1, 0) AS n FROM jobs WHERE status = 'queued'",
  // The queued jobs counted up to $1: the bound's comparisons need no more.
  countQueuedUpTo: "SELECT count(*) AS n FROM (SELECT 1 FROM jobs WHERE status = 'queued' LIMIT $1) q",
  queuedWithSecrets: "SELECT id FROM jobs WHERE status = 'queued' AND secrets_given ORDER BY seq",
  countOwnerLive: `SELECT count(*)::int AS n FROM jobs WHERE owner = $1 AND status IN ${LIVE}`,
  jobsInStatus: `SELECT ${JOB_COLUMNS} FROM jobs WHERE status = ANY($1::text[]) ORDER BY seq`,

  // $16: the inline bytes (NewAsset.inline) or null, kept in the record's own statement.
  insertAsset: `WITH kept AS (${KEEP_INLINE} SELECT $10, $16::bytea, $14 WHERE $16::bytea IS NOT NULL ${ON_INLINE_CONFLICT})
    INSERT INTO assets (${ASSET_COLUMNS})
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::json, $14,
      COALESCE($15::bigint, (SELECT expires_at FROM jobs WHERE id = $3)))
    RETURNING ${ASSET_COLUMNS}`,
  inlineBlob: "SELECT bytes, touched_at FROM inline_blobs WHERE blob_key = $1",
  inlineBlobKeys: "SELECT blob_key FROM inline_blobs WHERE blob_key > $1 ORDER BY blob_key LIMIT $2",
  // dropInlineBlob, in one transaction: the row locked first (a record's write under way over it
  // commits before), then removed only if no record names it, seen in the delete's own snapshot.
  lockInline: "SELECT 1 AS held FROM inline_blobs WHERE blob_key = $1 AND touched_at <= $2 FOR UPDATE",
  dropInline: "DELETE FROM inline_blobs WHERE blob_key = $1 AND NOT EXISTS (SELECT 1 FROM assets WHERE blob_key = $1)",
  getAsset: `SELECT ${ASSET_COLUMNS} FROM assets WHERE id = $1`,
  listJobOutputs: `SELECT ${ASSET_COLUMNS} FROM assets WHERE job_id = $1 ORDER BY seq`,
  listOutputsOfJobs: `SELECT ${ASSET_COLUMNS} FROM assets WHERE job_id = ANY($1::text[]) ORDER BY job_id, seq`,
  deleteAsset: "DELETE FROM assets WHERE id = $1 RETURNING blob_key",
  findAssetByBlob: `SELECT ${ASSET_COLUMNS} FROM assets WHERE blob_key = $2 AND owner = $1 ORDER BY seq DESC LIMIT 1`,
  findAssetByName: `SELECT ${ASSET_COLUMNS} FROM assets WHERE owner = $1 AND name = $2
    AND ($3::text IS NULL OR folder = $3) ORDER BY seq DESC LIMIT 1`,
  // Output name series (allotOutputNames): a block taken from a series, or no row when it is new.
  bumpOutputNames: `UPDATE output_names SET next = next + $5::bigint
    WHERE owner = $1::text AND folder = $2::text AND prefix = $3::text AND ext = $4::text RETURNING next - $5::bigint AS first`,
  // A new series starts past every counter the owner's names in it carry (prefix_NNNNN_ext).
  startOutputNames: `INSERT INTO output_names AS o (owner, folder, prefix, ext, next)
    SELECT $1::text, $2::text, $3::text, $4::text, COALESCE(MAX(mid::bigint), 0) + 1 + $5::bigint FROM (
      SELECT substr(name, length($3::text) + 2, GREATEST(0, length(name) - length($3::text) - length($4::text) - 2)) AS mid
      FROM assets WHERE owner = $1::text AND folder = $2::text
        AND left(name, length($3::text) + 1) = $3::text || '_' AND right(name, length($4::text) + 1) = '_' || $4::text
    ) named WHERE mid ~ '^[0-9]{5,18}$'
    ON CONFLICT (owner, folder, prefix, ext) DO UPDATE SET next = o.next + $5::bigint
    RETURNING o.next - $5::bigint AS first`,
  blobReferenced: "SELECT 1 AS found FROM assets WHERE blob_key = $1 LIMIT 1",
  keepBlob: "INSERT INTO pending_blobs (blob_key, bytes) VALUES ($1, $2) ON CONFLICT (blob_key) DO NOTHING",
  pendingBlobs: "SELECT blob_key, bytes FROM pending_blobs WHERE blob_key > $1 ORDER BY blob_key LIMIT $2",
  dropBlobs: "DELETE FROM pending_blobs WHERE blob_key = ANY($1::text[])",
  referencedBlobs: "SELECT DISTINCT blob_key FROM assets WHERE blob_key = ANY($1::text[])",
  // $1 task, $2 every ms, $3 now: a row only when the turn is taken (concurrent callers: one row).
  takeTurn: `INSERT INTO periodic_turns (task, taken_at) VALUES ($1, $3)
    ON CONFLICT (task) DO UPDATE SET taken_at = EXCLUDED.taken_at WHERE periodic_turns.taken_at <= EXCLUDED.taken_at - $2::bigint
    RETURNING task`,
  blobsInUse: `SELECT DISTINCT blob_key FROM assets WHERE blob_key = ANY($1::text[])
    UNION SELECT blob_key FROM pending_blobs WHERE blob_key = ANY($1::text[])`,

  // The batch is picked (and locked: a job a transition holds is waited for, never skipped) once, in a
  // CTE: a subquery with LIMIT may be rescanned while its rows change.
  expireJobs: `WITH picked AS MATERIALIZED (
      SELECT id FROM jobs WHERE status IN ${LIVE} AND expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE)
    UPDATE jobs SET status = 'expired', completed_at = $1, updated_at = GREATEST(COALESCE(updated_at, created_at), $1) FROM picked
    WHERE jobs.id = picked.id AND status IN ${LIVE} AND expires_at <= $1
    RETURNING ${qualifiedJobColumns("jobs")}`,
  purgeableJobs: `SELECT id FROM jobs WHERE expires_at <= $1 AND status IN ${TERMINAL} ORDER BY expires_at, seq LIMIT $2`,
  deleteJobsAssets: "DELETE FROM assets WHERE job_id = ANY($1::text[]) RETURNING id, blob_key, job_id, seq",
  deleteJobs: "DELETE FROM jobs WHERE id = ANY($1::text[])",
  // $1 owner, $2 ids (null: every finished job of the owner).
  hideHistory: `UPDATE jobs SET history_hidden = true
    WHERE owner = $1 AND status IN ${TERMINAL} AND NOT history_hidden AND ($2::text[] IS NULL OR id = ANY($2::text[]))`,
  historyHidden: "SELECT history_hidden FROM jobs WHERE id = $1",
  deleteExpiredUploads: `WITH picked AS MATERIALIZED (
      SELECT id FROM assets WHERE job_id IS NULL AND expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE)
    DELETE FROM assets USING picked WHERE assets.id = picked.id AND job_id IS NULL AND expires_at <= $1
    RETURNING assets.id, blob_key, seq`,
  deleteExpiredClaims: `WITH picked AS MATERIALIZED (
      SELECT owner, key FROM idempotency_keys WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE)
    DELETE FROM idempotency_keys k USING picked WHERE k.owner = picked.owner AND k.key = picked.key AND k.expires_at <= $1`,
} as const;

/** The highest `$n` a statement uses: the parameters a notifying form appends come after it. */
function lastParam(sql: string): number {
  return Math.max(0, ...[...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
}

/**
 * `update` (one UPDATE with one WHERE) that first sends notifications, its next two parameters the
 * channel and the payloads, in its own statement: a run's events ride on its writes. The payloads
 * go out whether or not a row matches (an uncorrelated condition is checked once, before any row),
 * and before the status trigger's own (AFTER triggers fire at the statement's end).
 */
function notifying(update: string): string {
  const where = /\bWHERE\b/;
  if (!where.test(update)) throw new Error("notifying: the statement has no WHERE");
  const n = lastParam(update) + 1;
  return `WITH fg_notified AS MATERIALIZED (SELECT count(pg_notify($${n}, p)) AS c FROM ${payloadRows(n + 1)} AS p)
    ${update.replace(where, "WHERE (SELECT c FROM fg_notified) >= 0 AND")}`;
}

/** The transition's channel parameter in its notifying forms (the payloads follow, then those sent only when the row moved). */
const TRANSITION_CHANNEL = lastParam(PG_SQL.transition) + 1;

/** The run's writes that carry its events (see `notifying`): the same parameters, then channel and payloads. */
export const PG_NOTIFYING_SQL = {
  updateProgressNotify: notifying(PG_SQL.updateProgress),
  updateProgressFencedNotify: notifying(PG_SQL.updateProgressFenced),
  transitionNotify: notifying(PG_SQL.transition),
  // The same, then the payloads sent only when the row moved (the select list's subquery runs only for a row).
  transitionNotifyThen: `${notifying(PG_SQL.transition).replace(/\)\s*UPDATE jobs/, "), fg_moved AS (UPDATE jobs")})
    SELECT fg_moved.*, (SELECT count(pg_notify($${TRANSITION_CHANNEL}, p)) FROM ${payloadRows(TRANSITION_CHANNEL + 2)} AS p) AS fg_then FROM fg_moved`,
  // Payloads alone, in a transaction that writes nothing ($1 channel, $2 payloadsParam): the relay's batches.
  notify: `SELECT pg_notify($1, p) FROM ${payloadRows(2)} AS p`,
} as const;

/** An owner's jobs newest first below a seq; $1 owner, $2 before, $3 limit, then the status set and the deployment when used. */
export function pgListJobsSql(byStatus: boolean, byDeployment: boolean, inHistory = false): string {
  return `SELECT ${JOB_COLUMNS} FROM jobs WHERE owner = $1 AND seq < $2
    ${inHistory ? "AND NOT history_hidden" : ""}
    ${byStatus ? "AND status = ANY($4::text[])" : ""}
    ${byDeployment ? `AND deployment_id = $${byStatus ? 5 : 4}` : ""}
    ORDER BY seq DESC LIMIT $3`;
}

/**
 * An owner's jobs still in the hosted history, sorted, at an offset (listJobsAtOffset), each row
 * with the number of jobs matching in all (one statement: page and total see one snapshot).
 * $1 owner, $2 now, $3 limit, $4 offset, then the status set, the deployment and the workflow id when used; finished
 * jobs past retention are left out, ties keep submission order.
 */
export function pgOffsetJobsSql(byStatus: boolean, byDeployment: boolean, sort: "created" | "duration", descending: boolean, byWorkflow = false): string {
  const dir = descending ? "DESC" : "ASC";
  const key = sort === "duration" ? `CASE WHEN started_at IS NOT NULL AND completed_at IS NOT NULL THEN completed_at - started_at ELSE 0 END ${dir}, ` : "";
  return `SELECT ${JOB_COLUMNS}, count(*) OVER () AS total FROM jobs
    WHERE owner = $1 AND NOT history_hidden AND NOT (status IN ${TERMINAL} AND expires_at <= $2)
    ${byStatus ? "AND status = ANY($5::text[])" : ""}
    ${byDeployment ? `AND deployment_id = $${byStatus ? 6 : 5}` : ""}
    ${byWorkflow ? `AND workflow_id = $${5 + Number(byStatus) + Number(byDeployment)}` : ""}
    ORDER BY ${key}seq ${dir} LIMIT $3 OFFSET $4`;
}

/**
 * An owner's jobs carrying every label of `labelCount` filters, newest first below a seq: the first
 * filter's (owner, key, value, seq) primary-key range drives backwards from the cursor, each other
 * one is a primary-key probe. $1 owner, $2 before, $3 limit, $4 keys[], $5 values[], then the
 * status set and the deployment when used.
 */
export function pgListLabeledJobsSql(labelCount: number, byStatus: boolean, byDeployment: boolean, inHistory = false): string {
  const others = Array.from({ length: labelCount - 1 }, (_, i) => i + 2)
    .map(
      (i) =>
        `AND EXISTS (SELECT 1 FROM job_labels l${i} WHERE l${i}.owner = $1 AND l${i}.key = ($4::text[])[${i}] AND l${i}.value = ($5::text[])[${i}] AND l${i}.seq = l1.seq)`,
    )
    .join("\n    ");
  return `SELECT ${qualifiedJobColumns("j")} FROM job_labels l1 JOIN jobs j ON j.seq = l1.seq
    WHERE l1.owner = $1 AND l1.key = ($4::text[])[1] AND l1.value = ($5::text[])[1] AND l1.seq < $2
    ${others}
    ${byStatus ? "AND j.status = ANY($6::text[])" : ""}
    ${byDeployment ? `AND j.deployment_id = $${byStatus ? 7 : 6}` : ""}
    ${inHistory ? "AND NOT j.history_hidden" : ""}
    ORDER BY l1.seq DESC LIMIT $3`;
}

/**
 * A batch of submissions in one statement: each key given is claimed (a free key or a dead claim
 * is taken, a live one refused, as claimKey), then the jobs whose key was taken or that gave none
 * are inserted, in batch order; their ids and seqs come back. Keys must be distinct; they are
 * claimed in key order, so that batches racing on the same keys lock them in the same order. One
 * array per column, one element per job: $1 ids, $2 owners, $3 deployment_ids, $4 created_ats,
 * $5 expires_ats, $6 output_node_ids (JSON text), $7 costs, $8 workflows (JSON text), $9
 * secrets_given, $10 keys (null: none), $11 claim times (now), $12 claim expiries, $13 metadata
 * (JSON text, null: none), $14 ComfyUI workflow ids (null: none). The labels of the jobs inserted go into job_labels in the same statement.
 */
export const PG_INSERT_JOBS = `WITH batch AS MATERIALIZED (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::float8[], $8::text[],
        $9::boolean[], $10::text[], $11::bigint[], $12::bigint[], $13::text[], $14::text[])
      WITH ORDINALITY AS b(id, owner, deployment_id, created_at, expires_at, output_node_ids, cost, workflow, secrets_given,
        key, claimed_at, claim_expires_at, metadata, workflow_id, ord)),
  claimed AS (
    INSERT INTO idempotency_keys (owner, key, job_id, claimed_at, expires_at)
    SELECT owner, key, id, claimed_at, claim_expires_at FROM batch WHERE key IS NOT NULL ORDER BY owner, key
    ON CONFLICT (owner, key) DO UPDATE
      SET job_id = excluded.job_id, claimed_at = excluded.claimed_at, expires_at = excluded.expires_at
      WHERE idempotency_keys.expires_at <= excluded.claimed_at
    RETURNING job_id),
  inserted AS (
    INSERT INTO jobs (id, owner, deployment_id, status, created_at, expires_at, output_node_ids, cost, workflow, secrets_given, metadata,
        workflow_id, updated_at)
    SELECT id, owner, deployment_id, 'queued', created_at, expires_at, output_node_ids::json, cost, workflow::json, secrets_given, metadata::json,
        workflow_id, created_at
      FROM batch WHERE key IS NULL OR id IN (SELECT job_id FROM claimed) ORDER BY ord
    RETURNING id, seq, owner, metadata),
  labeled AS (
    INSERT INTO job_labels (owner, key, value, seq)
    SELECT i.owner, l.key, l.value, i.seq FROM inserted i, json_each_text(i.metadata) l WHERE i.metadata IS NOT NULL)
  SELECT id, seq FROM inserted`;

/**
 * PG_INSERT_JOBS under the queue bound, in one statement (migration 15's function): $15 each
 * job's bound (null: none). One row with a null id when the span of the queue left no certain room.
 */
export const PG_INSERT_JOBS_BOUNDED =
  "SELECT id, seq FROM flowgate_insert_jobs_bounded($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::float8[], $8::text[], $9::boolean[], $10::text[], $11::bigint[], $12::bigint[], $13::text[], $14::text[], $15::bigint[])";

/** The database's clock in epoch ms: every process compares leases on this one clock. */
const DB_NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
/**
 * Live jobs whose lease passed (a null lease on a running job was written by a flowgate without
 * leases), and queued jobs whose secrets' holder stopped renewing (only those have a lease).
 */
const LEASE_PASSED = `((status IN ${RUN_SQL} AND (lease_until IS NULL OR lease_until < ${DB_NOW_MS}))
    OR (status = 'queued' AND lease_until < ${DB_NOW_MS}))`;

/**
 * Owners with queued jobs, one index probe each (a loose index scan on jobs_queued_owner_seq):
 * PostgreSQL has no skip scan, and a DISTINCT would read every queued row.
 */
const QUEUED_OWNERS = `owners AS (
    (SELECT owner FROM jobs WHERE status = 'queued' ORDER BY owner LIMIT 1)
    UNION ALL
    SELECT (SELECT j.owner FROM jobs j WHERE j.status = 'queued' AND j.owner > o.owner ORDER BY j.owner LIMIT 1)
      FROM owners o WHERE o.owner IS NOT NULL)`;
/** Each owner's jobs running (a canceling job still holds its slot). */
const RUNNING_BY_OWNER = `SELECT owner, count(*)::int AS n FROM jobs WHERE status IN ${RUN_SQL} GROUP BY owner`;
/**
 * A job claimed while queued (JobLeases.claimQueued): it waits in ComfyUI's queue under a worker's
 * lease. Only a claim raises lease_epoch, and any other claim moves the job out of `queued`.
 */
const CLAIMED_QUEUED = "status = 'queued' AND lease_epoch > 0";
/**
 * A job whose lease passed, claimed by a worker whose engine resumes runs (ComfyUI): its prompt
 * may be running or finished there, so a live worker of that kind takes it over (adoptExpired).
 * `q`: the table's qualifier.
 */
function resumableLeasePassed(q = ""): string {
  return `(${q}resumable AND ${q}lease_until < ${DB_NOW_MS} AND (${q}status IN ${RUN_SQL} OR (${q}status = 'queued' AND ${q}lease_epoch > 0)))`;
}
/** LEASE_PASSED with its columns qualified by `q`. */
function leasePassed(q: string): string {
  return q === "" ? LEASE_PASSED : LEASE_PASSED.replace(/\b(status|lease_until)\b/g, `${q}$1`);
}
/**
 * The expiry sweep's sight of this lapse of a job's lease (schema 19): taken after the lease
 * passed, so a sight from before a renewal, an adoption or a release does not count.
 */
function lapseSeen(q: string): string {
  return `${q}lapse_seen_at >= ${q}lease_until`;
}
/**
 * LEASE_PASSED for the expiry sweep: a resumable job is left to the adopters for $4 ms more (the
 * grace a process that does not adopt gives them), counted from the sweep's first sight of the
 * lapse (lapseUnseenSql), then fails as any other. $4 = 0: no grace, at once.
 */
function expiredSql(q = ""): string {
  return `(${leasePassed(q)} AND (NOT ${q}resumable OR $4::bigint = 0 OR (${lapseSeen(q)} AND ${q}lapse_seen_at < ${DB_NOW_MS} - $4::bigint)))`;
}
/** A resumable job in its adopters' grace whose lapse the sweep has not seen yet (it notes it). */
function lapseUnseenSql(q = ""): string {
  return `(${leasePassed(q)} AND ${q}resumable AND $4::bigint > 0 AND (${q}lapse_seen_at IS NULL OR NOT ${lapseSeen(q)}))`;
}

/**
 * Candidates a claim reads per owner beyond the jobs it may claim: concurrent claims skip the jobs
 * the others hold, so each reads past some of them before it has to claim again. Kept small: a
 * claim reads this many more rows for every owner with jobs queued.
 */
export const CANDIDATES_BEYOND = 4;

/**
 * The fair order, the same as one process's queue (src/jobs/fair-queue.ts): a queued job's level
 * is its owner's running jobs plus the owner's jobs queued before it, and jobs start by level,
 * ties by submission. A claim takes the lowest (level, seq); that leaves every other level as it
 * was (its owner runs one more and has one fewer queued before the rest), so the order (and a
 * position counted in it) holds until a run ends or a job arrives, and a claim of k jobs takes the
 * k lowest at once.
 *
 * The claim, one statement: among each owner's first $7 jobs this worker may run (others' secret
 * jobs excepted, $5; owners skipped, $4), up to $6 of the lowest (level, seq) move to running under
 * the worker's lease. Claims of several workers do not wait for each other: a job another claim
 * (or a cancel) holds is skipped (SKIP LOCKED), and its level still counts, as it is still queued
 * or already running, which is the same level for the jobs behind it. So concurrent claims take
 * what serial ones would. `wait`: a job held is waited for instead, then checked again (the retry
 * of a claim that found every candidate held). A job committed while the claim waited may be
 * younger than $2: it never starts before its creation. The last column counts the candidates
 * (a row of nulls when none was claimed), so that a claim that found only held jobs retries.
 * Each claimed row carries its graph: the run needs no read of its own. An owner's candidates
 * come in `seq + 0` order, which only jobs_queued_claim_order gives (schema 18): whatever the
 * statistics, the plan reads that index, never the primary key past finished jobs. The candidates' rows are
 * looked up by their seqs (= ANY of an array): joined to the candidates alone, whose number the
 * planner cannot tell, they were found by hashing every queued row, on every claim.
 * `keepQueued` (claimQueued): the job stays queued, its started_at null ($2 is null then); a job
 * so claimed (lease_epoch raised while queued) is never claimed again. $8 then says whether the
 * worker's engine resumes runs (`resumable`: adopted when the lease passes, see adoptExpired).
 */
function claimSql(where: string, wait: boolean, keepQueued = false): string {
  return `WITH RECURSIVE ${claimCtes(where, wait, keepQueued)}
  SELECT claimed.*, (SELECT count(*) FROM candidates)::int AS candidates
    FROM (SELECT 1) one LEFT JOIN claimed ON true ORDER BY claimed.level, claimed.seq`;
}

/**
 * The claim's common table expressions (claimSql), ending in `claimed`. `endedHere`: a count, per
 * owner `o.owner`, of its jobs this same statement moved out of running: the statement's snapshot
 * still sees them running, and they no longer hold a slot (the claim that rides the ends' statement).
 */
function claimCtes(where: string, wait: boolean, keepQueued = false, endedHere?: string): string {
  return `${QUEUED_OWNERS},
    candidates AS MATERIALIZED (
      SELECT c.seq, r.n${endedHere === undefined ? "" : ` - ${endedHere}`} + c.rank AS level FROM owners o
        -- Counted per owner by index: a whole-table count of running jobs is read by a bitmap
        -- that visits every row ever indexed as running until a vacuum (a bitmap scan never marks
        -- a dead row's entry), more on every claim of a long drain. One equality per status: a
        -- plan made on a few rows read an IN list as a filter over every job of the owner.
        CROSS JOIN LATERAL (SELECT count(*) AS n FROM (${RUN_STATUSES.map((status) => `SELECT 1 FROM jobs rj WHERE rj.owner = o.owner AND rj.status = '${status}'`).join(" UNION ALL ")}) rs) r
        CROSS JOIN LATERAL (
          SELECT q.seq, row_number() OVER (ORDER BY q.seq) - 1 AS rank FROM (
            SELECT j.seq FROM jobs j WHERE j.status = 'queued' AND j.lease_epoch = 0 AND j.owner = o.owner
              AND (NOT j.secrets_given OR j.id = ANY($5::text[])) ${where} ORDER BY j.seq + 0 LIMIT $7) q) c
      WHERE o.owner IS NOT NULL AND o.owner <> ALL($4::text[])),
    picked AS (
      -- The status compared in the "C" collation (equal for equal strings, as the default one)
      -- matches neither the queued partial index's predicate nor (status, seq): without statistics
      -- the planner read the seqs from a whole scan of the partial index, as long as the queue.
      SELECT j.seq, c.level FROM candidates c JOIN jobs j ON j.seq = c.seq
        WHERE j.seq = ANY(ARRAY(SELECT seq FROM candidates)) AND j.status COLLATE "C" = 'queued' AND j.lease_epoch = 0
      ORDER BY c.level, c.seq LIMIT $6 FOR UPDATE OF j${wait ? "" : " SKIP LOCKED"}),
    claimed AS (
      UPDATE jobs SET ${keepQueued ? "started_at = $2::bigint, resumable = $8::boolean" : "status = 'running', started_at = GREATEST($2::bigint, created_at), updated_at = GREATEST($2::bigint, created_at, updated_at)"}, worker_id = $1,
          lease_until = ${DB_NOW_MS} + $3, lease_epoch = jobs.lease_epoch + 1
        -- The status in the "C" collation, as in picked: the queued jobs' partial indexes do not
        -- match, so the rows come by seq (a plan made on a few rows walked the queued index instead).
        FROM picked WHERE jobs.seq = picked.seq AND jobs.status COLLATE "C" = 'queued' AND jobs.lease_epoch = 0
        RETURNING ${JOB_COLUMNS.replace(/\b(\w+)\b/g, "jobs.$1")}, jobs.lease_epoch, picked.level, jobs.workflow::text AS workflow)`;
}

/** Parameters of PG_SQL.endJobs: the claim that rides it numbers its own after them. */
const END_PARAMS = 38;

/**
 * Runs' ends (PG_SQL.endJobs, $1-$38) and the claim of the next jobs for the worker that ran them
 * (PG_LEASE_SQL.claim, its $1-$7 as $39-$45), in one statement: one round trip and one commit where
 * there were two. The claim counts the ends' jobs as no longer running (its snapshot is the
 * statement's, from before their move). Rows: `fg_kind` 'e' an end that moved (as endJobs's), 'c' a
 * claimed job (as the claim's), and one 'n' row with the claim's count of candidates.
 */
function endJobsClaimingSql(): string {
  const claim = claimCtes("", false, false, "(SELECT count(*) FROM moved em WHERE em.owner = o.owner)").replace(
    /\$(\d+)/g,
    (_, n: string) => `$${Number(n) + END_PARAMS}`,
  );
  const nulls = (n: number) => Array.from({ length: n }, () => "NULL").join(", ");
  const columns = JOB_COLUMN_NAMES.length;
  return `WITH RECURSIVE ${END_CTES}, ${claim}
  SELECT 'e' AS fg_kind, moved.*, ${END_THEN} AS fg_then, NULL::bigint AS lease_epoch, NULL::bigint AS level, NULL::text AS workflow, NULL::int AS candidates
    FROM moved
  UNION ALL SELECT 'c', ${qualifiedJobColumns("claimed")}, NULL, NULL, claimed.lease_epoch, claimed.level, claimed.workflow, NULL FROM claimed
  UNION ALL SELECT 'n', ${nulls(columns + 5)}, (SELECT count(*) FROM candidates)::int`;
}

/** The statement of a claim riding runs' ends (Store.carryClaims, src/store/postgres.ts). */
export const PG_RIDING_SQL = { endJobsClaiming: endJobsClaimingSql() } as const;

/** Statements of leased dispatch (src/store/postgres-leases.ts). */
export const PG_LEASE_SQL = {
  /** Processes holding a live lease on a running job (a metric: workers alive and busy). */
  busyWorkers: `SELECT count(DISTINCT worker_id)::int AS n FROM jobs WHERE status IN ${RUN_SQL} AND lease_until > ${DB_NOW_MS}`,
  // $1 worker, $2 started_at, $3 lease ms, $4 owners to skip, $5 secret-holding jobs of this
  // process, $6 jobs to claim at most, $7 candidates per owner.
  claim: claimSql("", false),
  claimWaiting: claimSql("", true),
  // The same among this process's secret jobs only (an API node runs those: only it holds the secrets).
  claimHeld: claimSql("AND j.id = ANY($5::text[])", false),
  claimHeldWaiting: claimSql("AND j.id = ANY($5::text[])", true),
  // The same, the job left queued ($2 null): claimQueued, under the claim lock (a held job is waited for).
  claimQueued: claimSql("", true, true),
  claimQueuedHeld: claimSql("AND j.id = ANY($5::text[])", true, true),
  // Each owner's jobs running or claimed while queued: both hold a slot of the owner's (claimQueued).
  slotsTakenByOwner: `SELECT owner, count(*)::int AS n FROM (
      SELECT owner FROM jobs WHERE status IN ${RUN_SQL} UNION ALL SELECT owner FROM jobs WHERE ${CLAIMED_QUEUED}) t
    GROUP BY owner`,
  // $1 job: the queued jobs before it in the fair order (no row when it is not queued). Per owner,
  // only the jobs of a level up to the job's own are read, in the claims' index order (seq + 0,
  // as a claim reads them: never the primary key walked past finished jobs).
  position: `WITH RECURSIVE ${QUEUED_OWNERS}, running AS (${RUNNING_BY_OWNER}),
    me AS (SELECT owner, seq FROM jobs WHERE id = $1 AND status = 'queued'),
    mine AS (SELECT me.seq, coalesce((SELECT n FROM running WHERE running.owner = me.owner), 0)
        + (SELECT count(*) FROM jobs j WHERE j.status = 'queued' AND j.owner = me.owner AND j.seq + 0 < me.seq) AS level FROM me)
    SELECT (SELECT count(*) FROM owners o
        CROSS JOIN LATERAL (SELECT coalesce((SELECT n FROM running WHERE running.owner = o.owner), 0) AS n) r
        CROSS JOIN LATERAL (
          SELECT j.seq, r.n + row_number() OVER (ORDER BY j.seq + 0) - 1 AS level FROM jobs j
          WHERE j.status = 'queued' AND j.owner = o.owner ORDER BY j.seq + 0 LIMIT greatest(0, mine.level - r.n + 1)) q
        WHERE o.owner IS NOT NULL AND (q.level, q.seq) < (mine.level, mine.seq))::int AS position FROM mine`,
  // Each owner's queued and running jobs (the counts a new job's position is taken from).
  queueCounts: `SELECT owner, (count(*) FILTER (WHERE status = 'queued'))::int AS queued,
      (count(*) FILTER (WHERE status <> 'queued'))::int AS running
    FROM jobs WHERE status IN ${LIVE} GROUP BY owner`,
  // $1 owner: its jobs queued or running (a hosted socket's queue_remaining, as GET /api/prompt's).
  liveCount: PG_SQL.countOwnerLive,
  // $1 worker, $2 ids, $3 lease ms. The worker's live jobs, and the queued jobs whose secrets it holds.
  renew: `UPDATE jobs SET worker_id = $1, lease_until = ${DB_NOW_MS} + $3
    WHERE id = ANY($2::text[]) AND ((worker_id = $1 AND (status IN ${RUN_SQL} OR (${CLAIMED_QUEUED})))
      OR (status = 'queued' AND secrets_given AND (worker_id IS NULL OR worker_id = $1))) RETURNING id, status`,
  // A canceling job ends canceled (what was asked), a running one or one claimed while queued
  // failed ($2), another queued one failed for its lost secrets ($3, started and ended at once: a
  // job leaves queued by running); $1 completed_at, $4 the adopters' grace (resumable jobs).
  // A resumable job in its grace is only noted as seen (expiredSql). Rows held by a transaction are
  // skipped: they are neither seen nor failed until it ends.
  failExpired: `WITH picked AS MATERIALIZED (
      SELECT id FROM jobs WHERE ${expiredSql()} OR ${lapseUnseenSql()} ORDER BY lease_until NULLS FIRST LIMIT 500 FOR UPDATE SKIP LOCKED),
    seen AS (UPDATE jobs SET lapse_seen_at = ${DB_NOW_MS} FROM picked WHERE jobs.id = picked.id AND ${lapseUnseenSql("jobs.")})
    UPDATE jobs SET status = CASE WHEN status = 'canceling' THEN 'canceled' ELSE 'failed' END, completed_at = $1,
      updated_at = GREATEST(COALESCE(updated_at, created_at), $1),
      started_at = CASE WHEN status = 'queued' THEN $1 ELSE started_at END,
      error = CASE WHEN status = 'canceling' THEN error WHEN status = 'queued' AND lease_epoch = 0 THEN $3::json ELSE $2::json END
    FROM picked WHERE jobs.id = picked.id AND ${expiredSql("jobs.")}
    RETURNING ${JOB_COLUMNS.replace(/\b(\w+)\b/g, "jobs.$1")}`,
  // $1 worker, $2 lease ms, $3 jobs at most: other workers' resumable jobs whose lease passed move to
  // this worker under a new claim (the epoch raised: the old holder's writes are refused), whatever
  // their status. (Its own it renews, even past their lease, while nobody took them.)
  adoptExpired: `WITH picked AS MATERIALIZED (
      SELECT id FROM jobs WHERE ${resumableLeasePassed()} AND worker_id IS DISTINCT FROM $1 ORDER BY lease_until LIMIT $3 FOR UPDATE SKIP LOCKED)
    UPDATE jobs SET worker_id = $1, lease_until = ${DB_NOW_MS} + $2, lease_epoch = jobs.lease_epoch + 1
    FROM picked WHERE jobs.id = picked.id AND ${resumableLeasePassed("jobs.")}
    RETURNING ${JOB_COLUMNS.replace(/\b(\w+)\b/g, "jobs.$1")}, jobs.lease_epoch, jobs.secrets_given`,
  // $1 worker, $2 ids: what renew extends, its lease passed now. A resumable job stays so, whatever
  // its status: the stop that gives it up left its prompt in ComfyUI for the adopter to follow.
  release: `UPDATE jobs SET worker_id = $1, lease_until = ${DB_NOW_MS} - 1
    WHERE id = ANY($2::text[]) AND ((worker_id = $1 AND (status IN ${RUN_SQL} OR (${CLAIMED_QUEUED})))
      OR (status = 'queued' AND secrets_given AND (worker_id IS NULL OR worker_id = $1)))`,
  // $1 worker, $2 ids: the live ones another worker holds now (taken over when this one's lease passed).
  heldByOthers: `SELECT id FROM jobs WHERE id = ANY($2::text[]) AND worker_id IS DISTINCT FROM $1
    AND (status IN ${RUN_SQL} OR (${CLAIMED_QUEUED}))`,
  stillQueued: "SELECT id FROM jobs WHERE id = ANY($1::text[]) AND status = 'queued'",
  // $1 worker: its live jobs (few: what one worker runs), by the status index, and those it claimed while queued.
  heldBy: `SELECT ${JOB_COLUMNS}, lease_epoch FROM jobs WHERE status IN ${RUN_SQL} AND worker_id = $1
    UNION ALL SELECT ${JOB_COLUMNS}, lease_epoch FROM jobs WHERE ${CLAIMED_QUEUED} AND worker_id = $1 ORDER BY seq`,
} as const;

/**
 * Statements of the shared position snapshot (src/store/postgres-positions.ts): one row holding,
 * for each owner with queued jobs, its running count and its queued seqs (int8, sorted), all
 * read from the jobs_queued_owner_seq index in one pass, so that a reader places a job in the fair
 * order with a binary search per owner, without parsing rows.
 */
export const PG_POSITION_SQL = {
  // $1 job: its seq and owner when queued, and the snapshot's version, age and cost.
  probe: `SELECT j.seq, j.owner, s.version, ${DB_NOW_MS} - s.taken_at AS age_ms, s.took_ms
    FROM (SELECT 1) one LEFT JOIN jobs j ON j.id = $1 AND j.status = 'queued' LEFT JOIN queue_snapshot s ON s.id = 1`,
  read: "SELECT version, max_seq, owners, seqs FROM queue_snapshot WHERE id = 1",
  // $1 the snapshot's max_seq, $2 a job's seq: each owner's queued jobs submitted between them
  // (a range of jobs_status_seq no longer than the submissions since the snapshot).
  newer: `SELECT owner, count(*)::int AS n FROM jobs WHERE status = 'queued' AND seq > $1 AND seq < $2 GROUP BY owner`,
  age: `SELECT version, took_ms, ${DB_NOW_MS} - taken_at AS age_ms FROM queue_snapshot WHERE id = 1`,
  // One statement, so the seqs, the running counts and max_seq see the same committed state.
  take: `WITH running AS (${RUNNING_BY_OWNER}),
    per AS (SELECT owner, count(*)::int AS n, string_agg(int8send(seq), ''::bytea ORDER BY seq) AS seqs
      FROM jobs WHERE status = 'queued' GROUP BY owner)
    INSERT INTO queue_snapshot (id, version, taken_at, max_seq, owners, seqs)
    SELECT 1, coalesce((SELECT version FROM queue_snapshot WHERE id = 1), 0) + 1, ${DB_NOW_MS},
      (SELECT coalesce(max(seq), 0) FROM jobs),
      coalesce((SELECT json_agg(json_build_array(per.owner, coalesce(r.n, 0), per.n) ORDER BY per.owner)
        FROM per LEFT JOIN running r USING (owner)), '[]'::json),
      coalesce((SELECT string_agg(seqs, ''::bytea ORDER BY owner) FROM per), ''::bytea)
    ON CONFLICT (id) DO UPDATE SET version = excluded.version, taken_at = excluded.taken_at,
      max_seq = excluded.max_seq, owners = excluded.owners, seqs = excluded.seqs
    RETURNING version, max_seq, owners, seqs`,
  tookMs: `UPDATE queue_snapshot SET took_ms = ${DB_NOW_MS} - taken_at WHERE id = 1`,
} as const;
