import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DatabaseSync } from "node:sqlite";
import { PG_SCHEMA_VERSION, openStore } from "../../src/store/index.ts";
import { PG_MIGRATIONS } from "../../src/store/postgres-schema.ts";
import { SQL, jobsInStatusSql, listJobsSql, listLabeledJobsSql, transitionSql } from "../../src/store/sqlite-queries.ts";
import { MIGRATIONS, SCHEMA_VERSION as SQLITE_SCHEMA_VERSION, migrate } from "../../src/store/sqlite-schema.ts";
import { openTestStore, storeKind } from "./helpers.ts";
import type { TestStore } from "./helpers.ts";

let t: TestStore;
beforeEach(async () => {
  t = await openTestStore();
});
afterEach(async () => {
  await t.cleanup();
});

const onSqlite = storeKind() === "sqlite";
const SCHEMA_VERSION = onSqlite ? SQLITE_SCHEMA_VERSION : PG_SCHEMA_VERSION;

describe("schema migrations", () => {
  it("records each applied version once across reopens", async () => {
    await t.reopen();
    await t.reopen();
    const rows = await t.sql("SELECT version FROM schema_migrations ORDER BY version");
    // Every migration once, in order, however often the database is reopened.
    // (PostgreSQL's numbers may skip one that another branch holds: labels are 10, 9 is elsewhere.)
    expect(rows.map((r) => r.version)).toEqual((onSqlite ? MIGRATIONS : PG_MIGRATIONS).map((m) => m.version));
  });

  it("refuses a database written by a newer schema", async () => {
    await t.sql("INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, 'future', 0)", SCHEMA_VERSION + 1);
    await expect(openStore(t.options)).rejects.toThrow(/newer/);
  });

  it.runIf(onSqlite)("opens an in-memory database for throwaway use", async () => {
    const store = await openStore({ dataDir: t.dataDir, fileName: ":memory:" });
    expect(await store.countQueued()).toBe(0);
    await store.close();
    await store.close(); // idempotent
  });

  it("refuses an unreachable PostgreSQL server plainly", async () => {
    await expect(openStore({ kind: "postgres", url: "postgres://127.0.0.1:1/none" })).rejects.toThrow(
      "cannot reach PostgreSQL at 127.0.0.1:1 (connection refused",
    );
  });
});

describe.runIf(onSqlite)("query plans", () => {
  const statements: Record<string, string> = {
    ...SQL,
    listAll: listJobsSql(0, false),
    listOneStatus: listJobsSql(1, false),
    listStatusesByDeployment: listJobsSql(3, true),
    transition: transitionSql(2),
    inStatus: jobsInStatusSql(2),
    listLabeled: listLabeledJobsSql(1, 0, false),
    listLabeledThreeStatusesByDeployment: listLabeledJobsSql(3, 2, true),
    deleteLabeledJob: SQL.deleteJob,
  };
  // Ordered reads that must come straight off an index (no sort of the whole match).
  const noSort = [
    "listLabeled",
    "listLabeledThreeStatusesByDeployment",
    "queuedJobs",
    "ownerQueuedJobs",
    "listAll",
    "listOneStatus",
    "listJobOutputs",
    "listOutputsOfJobs",
    "findAssetByBlob",
    "findAssetByName",
    "expireJobs",
    "purgeableJobs",
    "deleteExpiredUploads",
    "deleteExpiredClaims",
  ];

  // The index each hot or reaper read must use (a scan of another index can be as slow as a table scan).
  const expectedIndex: Record<string, string> = {
    getJob: "sqlite_autoindex_jobs_1",
    queuedJobs: "jobs_status_seq",
    countQueued: "jobs_status_seq",
    ownerQueuedJobs: "jobs_owner_status_seq",
    countOwnerLive: "jobs_owner_status_seq",
    listAll: "jobs_owner_seq",
    listOneStatus: "jobs_owner_status_seq",
    listJobOutputs: "assets_job_seq",
    listOutputsOfJobs: "assets_job_seq",
    findAssetByBlob: "assets_blob_owner_seq",
    findAssetByName: "assets_owner_name_seq",
    blobReferenced: "assets_blob_owner_seq",
    expireJobs: "jobs_live_expires_at",
    purgeableJobs: "jobs_done_expires_at",
    deleteExpiredUploads: "assets_upload_expires_at",
    deleteExpiredClaims: "idempotency_keys_expires_at",
  };
  // Reads through a WITHOUT ROWID table's primary key (job_labels), which the plan names so.
  const expectedPrimaryKey: Record<string, RegExp> = {
    listLabeled: /SEARCH l0 USING PRIMARY KEY \(owner=\? AND key=\? AND value=\? AND seq<\?\)/,
    listLabeledThreeStatusesByDeployment: /SEARCH l0 USING PRIMARY KEY .*SEARCH l2 EXISTS USING PRIMARY KEY \(owner=\? AND key=\? AND value=\? AND seq=\?\)/,
  };

  function planOf(sql: string): string[] {
    const db = new DatabaseSync(":memory:");
    try {
      migrate(db, 0);
      const params = Object.fromEntries([...sql.matchAll(/:(\w+)/g)].map((m) => [m[1]!, 1]));
      return db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all(params)
        .map((row) => String(row.detail));
    } finally {
      db.close();
    }
  }

  it.each(Object.keys(statements))("%s never scans a whole table", (name) => {
    const plan = planOf(statements[name]!);
    expect(
      // A bound JSON list of ids (json_each) is walked whole by design: it is the argument, not a table.
      plan.filter((step) => /^SCAN (?!json_each VIRTUAL TABLE)/.test(step)),
      plan.join(" | "),
    ).toEqual([]);
    if (noSort.includes(name))
      expect(
        plan.filter((step) => step.includes("TEMP B-TREE")),
        plan.join(" | "),
      ).toEqual([]);
  });

  it.each(Object.entries(expectedPrimaryKey))("%s walks job_labels' primary key newest first from the cursor", (name, pattern) => {
    expect(planOf(statements[name]!).join(" | ")).toMatch(pattern);
  });

  it.each(Object.entries(expectedIndex))("%s reads through %s", (name, index) => {
    const plan = planOf(statements[name]!).join(" | ");
    expect(plan).toMatch(new RegExp(`INDEX ${index}\\b`));
  });
});
