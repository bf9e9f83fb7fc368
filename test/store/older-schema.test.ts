// A database written by the version before the job's workflow id and updated_at (SQLite 5,
// PostgreSQL 14) opens migrated: its jobs read as before (no workflow id, their latest recorded
// time as updated_at), and new jobs keep both.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { SQLITE_FILE_NAME, openStore, type Store, type StoreOptions } from "../../src/store/index.ts";
import { PG_MIGRATIONS } from "../../src/store/postgres-schema.ts";
import { MIGRATIONS } from "../../src/store/sqlite-schema.ts";
import { TEST_DATABASE_URL, dropTestSchema, testSchemaName } from "../postgres/pg.ts";
import { T0, newJob, storeKind } from "./helpers.ts";

const onSqlite = storeKind() === "sqlite";
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const OLD_ROW = `INSERT INTO jobs (id, owner, status, created_at, started_at, completed_at, expires_at, output_node_ids, workflow)
  VALUES ('%id', 'alice', 'succeeded', ${T0}, ${T0 + 10}, ${T0 + 20}, ${T0 + 3_600_000}, '["2"]', '{}')`;

/** A database at the previous version holding one finished job; what openStore takes to open it. */
async function olderDatabase(jobId: string): Promise<StoreOptions> {
  if (onSqlite) {
    const dataDir = await mkdtemp(join(tmpdir(), "flowgate-older-"));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const db = new DatabaseSync(join(dataDir, SQLITE_FILE_NAME));
    db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at INTEGER NOT NULL)");
    for (const m of MIGRATIONS.filter((m) => m.version <= 5)) {
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations VALUES (?, ?, 0)").run(m.version, m.description);
    }
    db.exec(OLD_ROW.replace("%id", jobId));
    db.close();
    return { dataDir };
  }
  const schema = testSchemaName();
  cleanups.push(() => dropTestSchema(schema));
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA ${schema}; SET search_path = ${schema}`);
    await client.query("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at BIGINT NOT NULL)");
    for (const m of PG_MIGRATIONS.filter((m) => m.version <= 14)) {
      await client.query(m.sql);
      await client.query("INSERT INTO schema_migrations VALUES ($1, $2, 0)", [m.version, m.description]);
    }
    await client.query(OLD_ROW.replace("%id", jobId));
  } finally {
    await client.end();
  }
  return { kind: "postgres", url: TEST_DATABASE_URL, schema, maxConnections: 2 };
}

describe(`a database of the previous schema (${onSqlite ? "SQLite 5" : "PostgreSQL 14"})`, () => {
  it("opens migrated: old jobs read with no workflow id and their end as updated_at; new jobs keep both", async () => {
    const oldId = randomUUID();
    const store: Store = await openStore(await olderDatabase(oldId));
    cleanups.push(() => store.close());
    expect(await store.getJob(oldId)).toMatchObject({ status: "succeeded", workflow_id: null, updated_at: T0 + 20 });

    // A bounded submission goes through the store's batch insert (on PostgreSQL, the migrated function).
    const created = await store.createJob(newJob({ created_at: T0 + 30, workflow_id: "wf-1" }), { queueLimit: 100 });
    expect(created).toMatchObject({ workflow_id: "wf-1", updated_at: T0 + 30 });
    expect(await store.getJob(created.id)).toMatchObject({ workflow_id: "wf-1", updated_at: T0 + 30 });
    const page = await store.listJobsAtOffset("alice", { workflow_id: "wf-1", now: T0, sort: "created", descending: true, limit: 10, offset: 0 });
    expect(page).toMatchObject({ total: 1, jobs: [{ id: created.id }] });
    expect((await store.listJobsAtOffset("alice", { now: T0, sort: "created", descending: true, limit: 10, offset: 0 })).total).toBe(2);
  });
});
