// Every SQL statement of the SQLite store, in one place so that the tests can check the query
// plans of the hot and reaper paths. Named parameters (:name) bind from plain objects.

import { ASSET_COLUMNS, CLAIM_COLUMNS, JOB_COLUMNS, LIVE_SQL as LIVE, RUN_SQL, TERMINAL_SQL as TERMINAL, qualifiedJobColumns } from "./sql-fragments.ts";

/** `:prefix0, :prefix1, ...` for an IN list of `count` bound values. */
export function inList(prefix: string, count: number): string {
  if (!Number.isInteger(count) || count < 1) throw new RangeError("an IN list needs at least one value");
  return Array.from({ length: count }, (_, i) => `:${prefix}${i}`).join(", ");
}

/** Fixed statements, prepared once per connection. */
export const SQL = {
  // The two statements of every submission bind by position and return nothing: the store
  // knows every value it wrote, and RETURNING plus named binding cost a third of their time.
  insertJob: `INSERT INTO jobs (id, owner, deployment_id, status, created_at, expires_at, output_node_ids, cost, workflow, secrets_given, metadata,
      workflow_id, updated_at)
    VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?4)`,
  // Binds owner, key, value, seq.
  insertLabel: "INSERT INTO job_labels (owner, key, value, seq) VALUES (?, ?, ?, ?)",
  queuedWithSecrets: "SELECT id FROM jobs WHERE status = 'queued' AND secrets_given = 1 ORDER BY seq",
  // One statement takes a free key or replaces a dead claim, atomically; no change = live claim.
  // Binds owner, key, job_id, now, expires_at.
  claimKey: `INSERT INTO idempotency_keys (owner, key, job_id, claimed_at, expires_at)
    VALUES (?1, ?2, ?3, ?4, ?5)
    ON CONFLICT (owner, key) DO UPDATE
      SET job_id = excluded.job_id, claimed_at = excluded.claimed_at, expires_at = excluded.expires_at
      WHERE idempotency_keys.expires_at <= ?4`,
  bindHeldKey: `UPDATE idempotency_keys SET job_id = :job_id
    WHERE owner = :owner AND key = :key AND job_id IS NULL AND expires_at > :now
    RETURNING ${CLAIM_COLUMNS}`,
  getClaim: `SELECT ${CLAIM_COLUMNS} FROM idempotency_keys WHERE owner = :owner AND key = :key AND expires_at > :now`,
  releaseKey: "DELETE FROM idempotency_keys WHERE owner = :owner AND key = :key AND job_id IS NULL",

  getJob: `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = :id`,
  getWorkflow: "SELECT workflow FROM jobs WHERE id = :id",
  getLogs: "SELECT logs_text, logs_truncated, logs_captured_at FROM jobs WHERE id = :id",
  updateProgress: `UPDATE jobs SET progress = :progress WHERE id = :id AND status IN ${RUN_SQL}`,
  setLogs: `UPDATE jobs SET logs_text = :text, logs_truncated = :truncated, logs_captured_at = :captured_at
    WHERE id = :id`,

  queuedJobs: `SELECT ${JOB_COLUMNS} FROM jobs WHERE status = 'queued' AND seq > :after ORDER BY seq LIMIT :limit`,
  countQueued: "SELECT COUNT(*) AS n FROM jobs WHERE status = 'queued'",
  ownerQueuedJobs: `SELECT ${JOB_COLUMNS} FROM jobs WHERE owner = :owner AND status = 'queued' AND seq > :after ORDER BY seq LIMIT :limit`,
  countOwnerLive: `SELECT COUNT(*) AS n FROM jobs WHERE owner = :owner AND status IN ${LIVE}`,

  insertAsset: `INSERT INTO assets (${ASSET_COLUMNS})
    VALUES (:id, :owner, :job_id, :node_id, :name, :type, :content_type, :size_bytes, :hash, :blob_key, :folder,
      :file_path, :tags, :created_at, COALESCE(:expires_at, (SELECT expires_at FROM jobs WHERE id = :job_id)))
    RETURNING ${ASSET_COLUMNS}`,
  getAsset: `SELECT ${ASSET_COLUMNS} FROM assets WHERE id = :id`,
  listJobOutputs: `SELECT ${ASSET_COLUMNS} FROM assets WHERE job_id = :job_id ORDER BY seq`,
  // :ids a JSON array of job ids: one probe of assets_job_seq per id, whatever their number.
  listOutputsOfJobs: `SELECT ${ASSET_COLUMNS} FROM assets WHERE job_id IN (SELECT value FROM json_each(:ids)) ORDER BY job_id, seq`,
  deleteAsset: "DELETE FROM assets WHERE id = :id RETURNING blob_key",
  findAssetByBlob: `SELECT ${ASSET_COLUMNS} FROM assets WHERE blob_key = :blob_key AND owner = :owner
    ORDER BY seq DESC LIMIT 1`,
  findAssetByName: `SELECT ${ASSET_COLUMNS} FROM assets WHERE owner = :owner AND name = :name
    AND (:folder IS NULL OR folder = :folder) ORDER BY seq DESC LIMIT 1`,
  // The turn of a periodic task (takeTurn), as on PostgreSQL: a row only when it is taken.
  takeTurn: `INSERT INTO periodic_turns (task, taken_at) VALUES (:task, :now)
    ON CONFLICT (task) DO UPDATE SET taken_at = excluded.taken_at WHERE periodic_turns.taken_at <= excluded.taken_at - :every
    RETURNING task`,
  // Output name series (allotOutputNames), as on PostgreSQL.
  bumpOutputNames: `UPDATE output_names SET next = next + :count
    WHERE owner = :owner AND folder = :folder AND prefix = :prefix AND ext = :ext RETURNING next - :count AS first`,
  startOutputNames: `INSERT INTO output_names (owner, folder, prefix, ext, next)
    SELECT :owner, :folder, :prefix, :ext, COALESCE(MAX(CAST(mid AS INTEGER)), 0) + 1 + :count FROM (
      SELECT substr(name, length(:prefix) + 2, max(0, length(name) - length(:prefix) - length(:ext) - 2)) AS mid
      FROM assets WHERE owner = :owner AND folder = :folder
        AND substr(name, 1, length(:prefix) + 1) = :prefix || '_' AND substr(name, -(length(:ext) + 1)) = '_' || :ext
    ) WHERE length(mid) BETWEEN 5 AND 18 AND mid NOT GLOB '*[^0-9]*'
    ON CONFLICT (owner, folder, prefix, ext) DO UPDATE SET next = next + :count
    RETURNING next - :count AS first`,
  blobReferenced: "SELECT 1 AS found FROM assets WHERE blob_key = :blob_key LIMIT 1",
  keepBlob: "INSERT INTO pending_blobs (blob_key, bytes) VALUES (:blob_key, :bytes) ON CONFLICT (blob_key) DO NOTHING",
  pendingBlobs: "SELECT blob_key, bytes FROM pending_blobs WHERE blob_key > :after ORDER BY blob_key LIMIT :limit",
  dropBlob: "DELETE FROM pending_blobs WHERE blob_key = :blob_key",
  blobKept: "SELECT 1 AS found FROM pending_blobs WHERE blob_key = :blob_key",
  // Inline blobs (NewAsset.inline), as on PostgreSQL: a record's write touches its bytes' row.
  keepInline: `INSERT INTO inline_blobs (blob_key, bytes, touched_at) VALUES (:blob_key, :bytes, :touched_at)
    ON CONFLICT (blob_key) DO UPDATE SET touched_at = MAX(touched_at, excluded.touched_at)`,
  inlineBlob: "SELECT bytes, touched_at FROM inline_blobs WHERE blob_key = :blob_key",
  inlineBlobKeys: "SELECT blob_key FROM inline_blobs WHERE blob_key > :after ORDER BY blob_key LIMIT :limit",
  dropInline: `DELETE FROM inline_blobs WHERE blob_key = :blob_key AND touched_at <= :before
    AND NOT EXISTS (SELECT 1 FROM assets WHERE blob_key = :blob_key)`,

  // The reaper's statements name their index: without statistics the planner would rather walk
  // the (status, seq) index, i.e. every queued job, on each pass. Each WHERE repeats the
  // partial index's own predicate, which INDEXED BY requires.
  expireJobs: `UPDATE jobs SET status = 'expired', completed_at = :now, updated_at = MAX(COALESCE(updated_at, created_at), :now) WHERE id IN (
      SELECT id FROM jobs INDEXED BY jobs_live_expires_at WHERE status IN ${LIVE} AND expires_at <= :now
      ORDER BY expires_at LIMIT :limit)
    RETURNING ${JOB_COLUMNS}`,
  purgeableJobs: `SELECT id FROM jobs INDEXED BY jobs_done_expires_at WHERE expires_at <= :cutoff AND status IN ${TERMINAL}
    ORDER BY expires_at LIMIT :limit`,
  deleteJobAssets: "DELETE FROM assets WHERE job_id = :job_id RETURNING id, blob_key",
  deleteJob: "DELETE FROM jobs WHERE id = :id",
  hideHistory: `UPDATE jobs SET history_hidden = 1 WHERE owner = :owner AND status IN ${TERMINAL} AND history_hidden = 0`,
  hideHistoryItem: `UPDATE jobs SET history_hidden = 1 WHERE id = :id AND owner = :owner AND status IN ${TERMINAL} AND history_hidden = 0`,
  historyHidden: "SELECT history_hidden FROM jobs WHERE id = :id",
  deleteExpiredUploads: `DELETE FROM assets WHERE id IN (
      SELECT id FROM assets INDEXED BY assets_upload_expires_at
      WHERE job_id IS NULL AND expires_at <= :cutoff ORDER BY expires_at LIMIT :limit)
    RETURNING id, blob_key`,
  deleteExpiredClaims: `DELETE FROM idempotency_keys WHERE (owner, key) IN (
      SELECT owner, key FROM idempotency_keys INDEXED BY idempotency_keys_expires_at WHERE expires_at <= :now ORDER BY expires_at LIMIT :limit)`,
} as const;

/** An owner's jobs newest first, below a seq, with an optional status set and deployment. */
export function listJobsSql(statusCount: number, byDeployment: boolean, inHistory = false): string {
  return `SELECT ${JOB_COLUMNS} FROM jobs WHERE owner = :owner AND seq < :before
    ${statusCount > 0 ? `AND status IN (${inList("s", statusCount)})` : ""}
    ${inHistory ? "AND history_hidden = 0" : ""}
    ${byDeployment ? "AND deployment_id = :deployment_id" : ""}
    ORDER BY seq DESC LIMIT :limit`;
}

/**
 * An owner's jobs carrying every label of `labelCount` filters, newest first below a seq: the
 * first filter's (owner, key, value, seq) range drives (read backwards from :before), each other
 * one is a primary-key probe, and the job row is read only for a match.
 */
export function listLabeledJobsSql(labelCount: number, statusCount: number, byDeployment: boolean, inHistory = false): string {
  const others = Array.from({ length: labelCount - 1 }, (_, i) => i + 1)
    .map((i) => `AND EXISTS (SELECT 1 FROM job_labels l${i} WHERE l${i}.owner = :owner AND l${i}.key = :k${i} AND l${i}.value = :v${i} AND l${i}.seq = l0.seq)`)
    .join("\n    ");
  return `SELECT ${qualifiedJobColumns("jobs")}
    FROM job_labels l0 CROSS JOIN jobs ON jobs.seq = l0.seq
    WHERE l0.owner = :owner AND l0.key = :k0 AND l0.value = :v0 AND l0.seq < :before
    ${others}
    ${statusCount > 0 ? `AND jobs.status IN (${inList("s", statusCount)})` : ""}
    ${byDeployment ? "AND jobs.deployment_id = :deployment_id" : ""}
    ${inHistory ? "AND jobs.history_hidden = 0" : ""}
    ORDER BY l0.seq DESC LIMIT :limit`;
}

/**
 * An owner's jobs still in the hosted history, sorted, at an offset (listJobsAtOffset), or with
 * `count` their number. :now hides finished jobs past retention; ties keep submission order.
 */
export function offsetJobsSql(
  statusCount: number,
  byDeployment: boolean,
  sort: "created" | "duration",
  descending: boolean,
  count: boolean,
  byWorkflow = false,
): string {
  const where = `WHERE owner = :owner AND history_hidden = 0 AND NOT (status IN ${TERMINAL} AND expires_at <= :now)
    ${statusCount > 0 ? `AND status IN (${inList("s", statusCount)})` : ""}
    ${byDeployment ? "AND deployment_id = :deployment_id" : ""}
    ${byWorkflow ? "AND workflow_id = :workflow_id" : ""}`;
  if (count) return `SELECT COUNT(*) AS n FROM jobs ${where}`;
  const dir = descending ? "DESC" : "ASC";
  const key = sort === "duration" ? `CASE WHEN started_at IS NOT NULL AND completed_at IS NOT NULL THEN completed_at - started_at ELSE 0 END ${dir}, ` : "";
  return `SELECT ${JOB_COLUMNS} FROM jobs ${where} ORDER BY ${key}seq ${dir} LIMIT :limit OFFSET :offset`;
}

/** Guarded transition: changes status (and the flagged patch fields) only from the listed statuses. */
export function transitionSql(fromCount: number): string {
  return `UPDATE jobs SET status = :to,
      started_at = CASE WHEN :set_started_at = 1 THEN :started_at ELSE started_at END,
      completed_at = CASE WHEN :set_completed_at = 1 THEN :completed_at ELSE completed_at END,
      progress = CASE WHEN :set_progress = 1 THEN :progress ELSE progress END,
      error = CASE WHEN :set_error = 1 THEN :error ELSE error END,
      cost = CASE WHEN :set_cost = 1 THEN :cost ELSE cost END,
      updated_at = MAX(COALESCE(updated_at, created_at), :updated_at)
    WHERE id = :id AND status IN (${inList("f", fromCount)})
    RETURNING ${JOB_COLUMNS}`;
}

/** Jobs in any of the statuses, FIFO. */
export function jobsInStatusSql(statusCount: number): string {
  return `SELECT ${JOB_COLUMNS} FROM jobs WHERE status IN (${inList("s", statusCount)}) ORDER BY seq`;
}
