// SQLite schema, applied as numbered migrations recorded in schema_migrations. The DDL keeps
// to what PostgreSQL also accepts where that is cheap (CHECKs, partial indexes, RETURNING,
// ON CONFLICT); the triggers and AUTOINCREMENT are the SQLite-specific parts.
import type { DatabaseSync } from "node:sqlite";

/** Message of the trigger that guards terminal jobs; the store maps it to TerminalStatusError. */
export const TERMINAL_TRIGGER_MESSAGE = "flowgate: a terminal job status is final";

// A migration's text is the history of what it applied: status and column lists are written out,
// never built from the enums (src/store/sql-fragments.ts), which a later version may change.
// test/store/schema-enums.test.ts holds the migrated schema equal to them.

/** One schema step; versions are applied in order, each once. */
export interface Migration {
  version: number;
  description: string;
  sql: string;
}

/** Every migration of the SQLite schema, oldest first. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "jobs, assets, idempotency keys",
    sql: `
CREATE TABLE jobs (
  -- seq is the FIFO order; AUTOINCREMENT never reuses a value, even after deletes.
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  owner TEXT NOT NULL,
  deployment_id TEXT,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'canceling', 'succeeded', 'canceled', 'failed', 'expired')),
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  completed_at INTEGER,
  expires_at INTEGER NOT NULL,
  progress TEXT,
  error TEXT,
  output_node_ids TEXT NOT NULL,
  cost REAL,
  logs_text TEXT,
  logs_truncated INTEGER,
  logs_captured_at INTEGER,
  -- Last, so reads that skip it never touch its overflow pages.
  workflow TEXT NOT NULL,
  CHECK (status NOT IN ('succeeded', 'canceled', 'failed', 'expired') OR completed_at IS NOT NULL),
  CHECK (status <> 'running' OR started_at IS NOT NULL),
  CHECK ((logs_text IS NULL) = (logs_captured_at IS NULL))
);
CREATE INDEX jobs_status_seq ON jobs (status, seq);
CREATE INDEX jobs_owner_seq ON jobs (owner, seq);
CREATE INDEX jobs_owner_status_seq ON jobs (owner, status, seq);
-- Expiry, split by phase: the reaper expires live jobs and purges finished ones, and each
-- pass reads only its own part however long the queue is.
CREATE INDEX jobs_live_expires_at ON jobs (expires_at) WHERE status IN ('queued', 'running', 'canceling');
CREATE INDEX jobs_done_expires_at ON jobs (expires_at) WHERE status IN ('succeeded', 'canceled', 'failed', 'expired');

-- The end state is written once: no code path may alter a terminal job's outcome.
CREATE TRIGGER jobs_terminal_is_final
BEFORE UPDATE OF status, started_at, completed_at, error ON jobs
FOR EACH ROW
WHEN OLD.status IN ('succeeded', 'canceled', 'failed', 'expired')
  AND (NEW.status IS NOT OLD.status
    OR NEW.started_at IS NOT OLD.started_at
    OR NEW.completed_at IS NOT OLD.completed_at
    OR NEW.error IS NOT OLD.error)
BEGIN
  SELECT RAISE(ABORT, '${TERMINAL_TRIGGER_MESSAGE}');
END;

CREATE TRIGGER jobs_identity_is_fixed
BEFORE UPDATE OF seq, id, owner, deployment_id, created_at ON jobs
FOR EACH ROW
WHEN NEW.seq IS NOT OLD.seq OR NEW.id IS NOT OLD.id OR NEW.owner IS NOT OLD.owner
  OR NEW.deployment_id IS NOT OLD.deployment_id OR NEW.created_at IS NOT OLD.created_at
BEGIN
  SELECT RAISE(ABORT, 'flowgate: a job identity is fixed');
END;

CREATE TABLE assets (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  owner TEXT NOT NULL,
  job_id TEXT REFERENCES jobs (id),
  node_id TEXT,
  name TEXT NOT NULL,
  type TEXT CHECK (type IN ('image', 'video', 'audio', 'text', 'file', 'latent')),
  content_type TEXT NOT NULL,
  size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
  hash TEXT,
  blob_key TEXT NOT NULL CHECK (length(blob_key) = 64),
  folder TEXT NOT NULL CHECK (folder IN ('output', 'temp', 'input')),
  file_path TEXT,
  tags TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER
);
CREATE INDEX assets_job_seq ON assets (job_id, seq);
CREATE INDEX assets_blob_owner_seq ON assets (blob_key, owner, seq);
CREATE INDEX assets_owner_name_seq ON assets (owner, name, seq);
CREATE INDEX assets_upload_expires_at ON assets (expires_at) WHERE job_id IS NULL;

CREATE TABLE idempotency_keys (
  owner TEXT NOT NULL,
  key TEXT NOT NULL,
  job_id TEXT,
  claimed_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (owner, key)
);
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
`,
  },
  {
    version: 2,
    description: "accounts, API keys and deployments of the cloud and serverless surfaces",
    sql: `
CREATE TABLE accounts (
  name TEXT PRIMARY KEY,
  tier TEXT NOT NULL,
  credits REAL NOT NULL,
  subscription_active INTEGER NOT NULL CHECK (subscription_active IN (0, 1)),
  created_at INTEGER NOT NULL
);
-- Keys are stored as SHA-256 digests: a leaked database does not leak usable keys.
CREATE TABLE api_keys (
  key_hash TEXT PRIMARY KEY,
  account TEXT NOT NULL REFERENCES accounts (name),
  prefix TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
);
CREATE INDEX api_keys_account ON api_keys (account);
CREATE TABLE deployments (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('provisioning', 'starting', 'ready', 'stopped')),
  demo INTEGER NOT NULL CHECK (demo IN (0, 1)),
  created_at INTEGER NOT NULL
);
`,
  },
  {
    version: 3,
    description: "whether a job was submitted with secrets (never the secrets themselves)",
    sql: `
-- extra_data lives in memory only: after a restart a queued job that had some cannot run as
-- submitted, and this flag lets recovery fail it with a code that says so.
ALTER TABLE jobs ADD COLUMN secrets_given INTEGER NOT NULL DEFAULT 0 CHECK (secrets_given IN (0, 1));
`,
  },
  {
    version: 4,
    description: "bytes of small outputs committed with their job's end before their blob files were synced",
    sql: `
-- Store.transitionJobWithAssets writes them in the end's transaction (one fsync for bytes, records
-- and end); dropPendingBlobs deletes them once the blob files are durable, and a start after a
-- power loss writes any left back to the blob store.
CREATE TABLE pending_blobs (
  blob_key TEXT PRIMARY KEY,
  bytes BLOB NOT NULL
);
`,
  },
  {
    version: 5,
    description: "job labels (metadata) and their side table for filtered listings; jobs taken out of the hosted history",
    sql: `
-- NULL when the job has none (most jobs): a NULL after the workflow is read from the record's
-- header alone, so reads of unlabeled jobs never touch the workflow's overflow pages.
ALTER TABLE jobs ADD COLUMN metadata TEXT;
-- Taken out of the hosted history (ComfyUI's POST /history); the job itself stays until it expires.
ALTER TABLE jobs ADD COLUMN history_hidden INTEGER NOT NULL DEFAULT 0 CHECK (history_hidden IN (0, 1));
-- One row per label: a filtered page walks (owner, key, value) newest first from the cursor, as
-- an unfiltered one walks jobs_owner_seq.
CREATE TABLE job_labels (
  owner TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (owner, key, value, seq)
) WITHOUT ROWID;
-- A job's labels go with it (retention, history deletes), by their primary key.
CREATE TRIGGER jobs_labels_follow
AFTER DELETE ON jobs
FOR EACH ROW
WHEN OLD.metadata IS NOT NULL
BEGIN
  DELETE FROM job_labels WHERE (owner, key, value, seq) IN (SELECT OLD.owner, j.key, j.value, OLD.seq FROM json_each(OLD.metadata) j);
END;
`,
  },
  {
    version: 6,
    description: "a job's ComfyUI workflow id and the time of its last status change",
    sql: `
-- The only part of extra_data ever kept (extra_pnginfo.workflow.id, what ComfyUI's job list filters
-- by); NULL when the submission had none. NULL in rows written before this version.
ALTER TABLE jobs ADD COLUMN workflow_id TEXT;
-- Set at creation and by every status change (a cancel request included); NULL in rows written
-- before this version, which read the latest of created_at, started_at and completed_at instead.
ALTER TABLE jobs ADD COLUMN updated_at INTEGER;
`,
  },
  {
    version: 7,
    description: "output name series: the next counter of each owner's output names, allotted in blocks",
    sql: `
-- As PostgreSQL's migration 16: a block of counters per statement, never the same one twice.
CREATE TABLE output_names (
  owner TEXT NOT NULL,
  folder TEXT NOT NULL,
  prefix TEXT NOT NULL,
  ext TEXT NOT NULL,
  next INTEGER NOT NULL,
  PRIMARY KEY (owner, folder, prefix, ext)
) WITHOUT ROWID;
`,
  },
  {
    version: 8,
    description: "turns of periodic tasks shared by the processes of a store",
    sql: `
-- As PostgreSQL's migration 20: when a process last took the turn of a periodic task (Store.takeTurn).
CREATE TABLE periodic_turns (
  task TEXT PRIMARY KEY,
  taken_at INTEGER NOT NULL
) WITHOUT ROWID;
`,
  },
  {
    version: 9,
    description: "small outputs' bytes kept in the database",
    sql: `
-- As PostgreSQL's migration 21: bytes of outputs whose record carried them (NewAsset.inline).
CREATE TABLE inline_blobs (
  blob_key TEXT PRIMARY KEY,
  bytes BLOB NOT NULL,
  touched_at INTEGER NOT NULL
);
`,
  },
];

/** The schema version this code writes. */
export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/**
 * Brings the database to SCHEMA_VERSION in one immediate transaction (safe when several
 * processes open the file at once); refuses a database written by a newer flowgate.
 */
export function migrate(db: DatabaseSync, now: number): number {
  db.exec("BEGIN IMMEDIATE");
  try {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      description TEXT NOT NULL,
      applied_at INTEGER NOT NULL
    )`);
    const row = db.prepare("SELECT MAX(version) AS version FROM schema_migrations").get() as { version: number | null };
    const current = row.version ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new Error(`database schema version ${current} is newer than this flowgate (${SCHEMA_VERSION})`);
    }
    const record = db.prepare("INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)");
    for (const migration of MIGRATIONS) {
      if (migration.version <= current) continue;
      db.exec(migration.sql);
      record.run(migration.version, migration.description, now);
    }
    db.exec("COMMIT");
    return SCHEMA_VERSION;
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}
