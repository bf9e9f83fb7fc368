// The migrated schema agrees with the lists the statements are built from (src/store/sql-fragments.ts):
// the status, output type and folder CHECKs, the partial indexes and the terminal guard against the
// contract's generated enums, and each table's columns against the records' column lists. The
// migrations keep their literal text, so a changed enum must come with a migration, or this fails.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HOSTED_FILE_TYPES, JOB_STATUSES, OUTPUT_TYPES, TERMINAL_JOB_STATUSES } from "../../generated/enums.ts";
import { ASSET_COLUMN_NAMES, CLAIM_COLUMN_NAMES, JOB_COLUMN_NAMES, RUN_STATUSES } from "../../src/store/sql-fragments.ts";
import { LIVE_STATUSES } from "../../src/store/types.ts";
import { newJob, openTestStore, storeKind } from "./helpers.ts";
import type { TestStore } from "./helpers.ts";

let t: TestStore;
beforeEach(async () => {
  t = await openTestStore();
});
afterEach(async () => {
  await t.cleanup();
});

const onSqlite = storeKind() === "sqlite";

/** The plain-word string literals of an SQL text, sorted (`'queued'`, `'queued'::text`, ...). */
function words(sql: string): string[] {
  return [...sql.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!).sort();
}

const sorted = (values: readonly string[]) => [...values].sort();

/** Each table's column names. */
async function columnsOf(table: string): Promise<string[]> {
  const rows = onSqlite
    ? await t.sql("SELECT name FROM pragma_table_info(?)", table)
    : await t.sql("SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?", table);
  return rows.map((row) => row.name as string).sort();
}

/** The definition of an index (its WHERE clause holds the statuses). */
async function indexDefinition(name: string): Promise<string> {
  const rows = onSqlite
    ? await t.sql("SELECT sql AS def FROM sqlite_master WHERE type = 'index' AND name = ?", name)
    : await t.sql("SELECT indexdef AS def FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?", name);
  expect(rows, `index ${name}`).toHaveLength(1);
  return rows[0]!.def as string;
}

/** A table's CHECK constraints, each as its text (SQLite: cut out of the table's CREATE statement). */
async function checksOf(table: string): Promise<string[]> {
  if (!onSqlite) {
    const rows = await t.sql(
      `SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid
        JOIN pg_namespace n ON n.oid = r.relnamespace WHERE n.nspname = current_schema() AND r.relname = ? AND c.contype = 'c'`,
      table,
    );
    return rows.map((row) => row.def as string);
  }
  const [row] = await t.sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", table);
  const sql = row!.sql as string;
  const checks: string[] = [];
  for (let at = sql.indexOf("CHECK ("); at >= 0; at = sql.indexOf("CHECK (", at + 1)) {
    let depth = 0;
    let end = at + "CHECK ".length;
    do {
      if (sql[end] === "(") depth++;
      if (sql[end] === ")") depth--;
      end++;
    } while (depth > 0);
    checks.push(sql.slice(at, end));
  }
  return checks;
}

/** The one CHECK of a table that mentions every one of `terms`. */
async function checkNaming(table: string, ...terms: string[]): Promise<string> {
  const matching = (await checksOf(table)).filter((check) => terms.every((term) => check.includes(term)));
  expect(matching, `the CHECK of ${table} naming ${terms.join(", ")}`).toHaveLength(1);
  return matching[0]!;
}

/** The text of the terminal guard: SQLite's trigger, PostgreSQL's trigger function. */
async function terminalGuard(): Promise<string> {
  const rows = onSqlite
    ? await t.sql("SELECT sql AS def FROM sqlite_master WHERE type = 'trigger' AND name = 'jobs_terminal_is_final'")
    : await t.sql(
        "SELECT prosrc AS def FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema() AND p.proname = 'jobs_guard'",
      );
  expect(rows).toHaveLength(1);
  return rows[0]!.def as string;
}

describe("the migrated schema and the generated enums", () => {
  it("allows exactly the contract's job statuses", async () => {
    expect(words(await checkNaming("jobs", "status", "'queued'"))).toEqual(sorted(JOB_STATUSES));
  });

  it("requires completed_at of exactly the terminal statuses, and guards exactly those", async () => {
    expect(words(await checkNaming("jobs", "status", "completed_at"))).toEqual(sorted(TERMINAL_JOB_STATUSES));
    expect(words(await terminalGuard())).toEqual(sorted(TERMINAL_JOB_STATUSES));
    if (onSqlite) return;
    // PostgreSQL's trigger calls the guard only for the rows its WHEN names: the same statuses.
    const [trigger] = await t.sql("SELECT pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgname = 'jobs_guard' AND tgrelid = 'jobs'::regclass");
    expect(words(trigger!.def as string)).toEqual(sorted(TERMINAL_JOB_STATUSES));
  });

  it.skipIf(onSqlite)("runs no guard function for a live job's moves (PostgreSQL: the trigger's WHEN leaves them out)", async () => {
    const job = await t.store.createJob(newJob());
    const calls = async (statement: string) => {
      const [row] = await t.sql(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`, job.id);
      const triggers = (row!["QUERY PLAN"] as Array<{ Triggers: Array<{ "Trigger Name": string; Calls: number }> }>)[0]!.Triggers;
      return triggers.find((trigger) => trigger["Trigger Name"] === "jobs_guard")?.Calls ?? 0;
    };
    expect(await calls("UPDATE jobs SET status = 'running', started_at = 1 WHERE id = ?")).toBe(0);
    expect(await calls("UPDATE jobs SET status = 'succeeded', completed_at = 2 WHERE id = ?")).toBe(0);
    expect(await calls("UPDATE jobs SET cost = 3 WHERE id = ?")).toBe(1);
  });

  it("indexes expiry by the live and the terminal statuses", async () => {
    expect(words(await indexDefinition("jobs_live_expires_at"))).toEqual(sorted(LIVE_STATUSES));
    expect(words(await indexDefinition("jobs_done_expires_at"))).toEqual(sorted(TERMINAL_JOB_STATUSES));
  });

  it.runIf(!onSqlite)("indexes leases by the statuses of a run", async () => {
    expect(words(await indexDefinition("jobs_live_lease_until"))).toEqual(sorted(RUN_STATUSES));
  });

  it("allows exactly the contract's output types and folders on assets", async () => {
    expect(words(await checkNaming("assets", "type", "'image'"))).toEqual(sorted(OUTPUT_TYPES));
    expect(words(await checkNaming("assets", "folder"))).toEqual(sorted(HOSTED_FILE_TYPES));
  });
});

describe("the migrated schema and the records' column lists", () => {
  // Columns a job row has beyond its record: read by their own methods (workflow, logs) or by none.
  const jobExtras = ["logs_text", "logs_truncated", "logs_captured_at", "workflow", "secrets_given", "history_hidden"];
  // Leases exist only on PostgreSQL (several processes).
  const leaseColumns = onSqlite ? [] : ["worker_id", "lease_until", "lease_epoch", "resumable", "lapse_seen_at"];

  it("has a jobs column for each field of a job record, and only the known others", async () => {
    expect(await columnsOf("jobs")).toEqual(sorted([...JOB_COLUMN_NAMES, ...jobExtras, ...leaseColumns]));
  });

  it("has an assets column for each field of an asset record, and its seq", async () => {
    expect(await columnsOf("assets")).toEqual(sorted([...ASSET_COLUMN_NAMES, "seq"]));
  });

  it("has an idempotency_keys column for each field of a claim, and no other", async () => {
    expect(await columnsOf("idempotency_keys")).toEqual(sorted(CLAIM_COLUMN_NAMES));
  });
});
