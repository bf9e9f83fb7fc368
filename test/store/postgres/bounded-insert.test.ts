// The newest flowgate_insert_jobs_bounded (migration 15's, which added the workflow ids) is the
// store's batch insert under the queue's lock: its text must stay the store's PG_INSERT_JOBS (a
// change to one without a migration for the other fails here).
import { describe, expect, it } from "vitest";
import { PG_INSERT_JOBS } from "../../../src/store/postgres-queries.ts";
import { PG_MIGRATIONS, PG_QUEUE_LOCK } from "../../../src/store/postgres-schema.ts";

describe("flowgate_insert_jobs_bounded (migration 15)", () => {
  const sql = PG_MIGRATIONS.findLast((m) => m.sql.includes("CREATE FUNCTION flowgate_insert_jobs_bounded"))?.sql ?? "";

  it("inserts with the store's statement verbatim, under the queue's lock", () => {
    expect(sql).toContain(`RETURN QUERY ${PG_INSERT_JOBS};`);
    expect(sql).toContain(`PERFORM pg_advisory_xact_lock(${PG_QUEUE_LOCK});`);
  });
});
