// Every fixed statement of the PostgreSQL store, planned against deep tables: none reads a whole
// large table. The plan checked is the generic one (parameters unknown), which a named statement
// settles on after five calls, so it is what a long-running process runs.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore, type Store } from "../../../src/store/index.ts";
import { PG_LEASE_SQL, PG_NOTIFYING_SQL, PG_POSITION_SQL, PG_SQL, payloadsParam } from "../../../src/store/postgres-queries.ts";
import { createTestSchema, dropTestSchema, postgresUnavailable, TEST_DATABASE_URL } from "../../postgres/pg.ts";
import { newAsset, newJob } from "../helpers.ts";

const unavailable = await postgresUnavailable();
const JOBS = 20_000;
/** Read in full on purpose, with the reason. */
const FULL_READS_ALLOWED: Record<string, string> = {
  "PG_SQL.jobsInStatus": "once, as a single process starts (its running jobs); its first calls are planned for their values",
};

let schema: string;
let store: Store;
let db: pg.Client;

beforeAll(async () => {
  if (unavailable !== null) return;
  schema = await createTestSchema();
  store = await openStore({ kind: "postgres", url: TEST_DATABASE_URL, schema });
  const job = await store.createJob(newJob());
  await store.addAsset(newAsset({ job_id: job.id }));
  db = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await db.connect();
  await db.query(`SET search_path = ${schema}`);
  // Copies of the first job, most of them its owner's; half of them finished, each with a record of its own bytes.
  await db.query(
    `INSERT INTO jobs OVERRIDING SYSTEM VALUE SELECT (jsonb_populate_record(t, jsonb_build_object('id', gen_random_uuid()::text, 'seq', t.seq + g, 'owner', CASE WHEN g % 100 = 0 THEN 'o' || (g % 7) ELSE t.owner END))).*
      FROM jobs t, generate_series(1, $1::int) g`,
    [JOBS],
  );
  await db.query("SELECT setval(pg_get_serial_sequence('jobs', 'seq'), (SELECT max(seq) FROM jobs))");
  await db.query("UPDATE jobs SET status = 'succeeded', started_at = created_at, completed_at = created_at + 1 WHERE seq % 2 = 0");
  await db.query(
    `INSERT INTO assets OVERRIDING SYSTEM VALUE SELECT (jsonb_populate_record(a, jsonb_build_object('id', gen_random_uuid()::text, 'seq', a.seq + j.seq, 'job_id', j.id, 'owner', j.owner, 'blob_key', md5(j.id) || md5(j.owner || j.id)))).*
      FROM assets a, jobs j WHERE j.status = 'succeeded'`,
  );
  await db.query("SELECT setval(pg_get_serial_sequence('assets', 'seq'), (SELECT max(seq) FROM assets))");
  await db.query("VACUUM ANALYZE"); // the statistics autovacuum leaves
}, 120_000);

afterAll(async () => {
  if (unavailable !== null) return;
  await db.end();
  await store.close();
  await dropTestSchema(schema);
});

describe.skipIf(unavailable !== null)("the PostgreSQL store's statements on deep tables", () => {
  it(`read no large table in full (${JOBS.toLocaleString("en-US")} jobs, half of them finished with a record each)`, async () => {
    const groups = { PG_SQL, PG_NOTIFYING_SQL, PG_LEASE_SQL, PG_POSITION_SQL } as Record<string, Record<string, unknown>>;
    const full: string[] = [];
    let checked = 0;
    for (const [group, statements] of Object.entries(groups)) {
      for (const [name, sql] of Object.entries(statements)) {
        if (typeof sql !== "string" || `${group}.${name}` in FULL_READS_ALLOWED) continue;
        const params = Math.max(0, ...[...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
        await db.query("BEGIN");
        try {
          await db.query(`PREPARE checked AS ${sql}`);
          await db.query("SET LOCAL plan_cache_mode = force_generic_plan");
          const { rows } = await db.query(params === 0 ? "EXPLAIN EXECUTE checked" : `EXPLAIN EXECUTE checked(${Array(params).fill("NULL").join(", ")})`);
          const plan = rows.map((r) => String(r["QUERY PLAN"])).join("\n");
          for (const scan of plan.matchAll(/Seq Scan on (\w+)[^\n]*rows=(\d+)/g))
            if (Number(scan[2]) > 1000) full.push(`${group}.${name}: ${scan[1]} (${scan[2]} rows)`);
          checked++;
        } finally {
          await db.query("ROLLBACK");
          await db.query("DEALLOCATE ALL");
        }
      }
    }
    expect(full).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });

  it("the batched ends' statement settles on its generic plan: planned once per connection, not on every call", async () => {
    const [{ id }] = (await db.query<{ id: string }>("SELECT id FROM jobs WHERE status = 'queued' LIMIT 1")).rows as [{ id: string }];
    const T = Date.now();
    // One end with its final progress, fenced, carrying events and one output record with its
    // bytes inline, as a worker sends it (#endAll).
    // biome-ignore format: the 38 parameters in rows (the move, the events, the record)
    const oneEnd = [
      [id], ["succeeded"], ["running"], [false], [null], [true], [T], [true], ['{"value":1,"max":1}'], [false], [null], [false], [null],
      [true], ["w"], [1], [T], "fg_plans_test", payloadsParam(['{"type":"progress"}']), [1], payloadsParam(['{"type":"executed"}']),
      [randomUUID()], ["alice"], [id], ["2"], ["a.png"], ["image"], ["image/png"], [10], [`blake3:${"a".repeat(64)}`], ["a".repeat(64)],
      ["output"], [null], ["[]"], [T], [null], [1], [Buffer.alloc(10)],
    ];
    await db.query("BEGIN");
    try {
      for (let i = 0; i < 8; i++) await db.query({ name: "plans_test_ends", text: PG_SQL.endJobs, values: oneEnd });
    } finally {
      await db.query("ROLLBACK");
    }
    // Each call's own plan, with the true lengths of its arrays, looked cheaper than the generic
    // one: the statement was planned again on every call, more of its cost than running it.
    const { rows } = await db.query("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'plans_test_ends'");
    expect(rows[0]).toEqual({ generic_plans: "3", custom_plans: "5" });
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
