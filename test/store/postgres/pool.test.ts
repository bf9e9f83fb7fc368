// Pooled connections (src/store/postgres-pool.ts): each is replaced once its lifetime passed, so
// that the named statements it planned for the tables as they were are planned again.
import { randomUUID } from "node:crypto";
import type pg from "pg";
// @ts-expect-error node-postgres ships no types for its utilities
import { prepareValue } from "pg/lib/utils.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore, type Store } from "../../../src/store/index.ts";
import { postgresPool } from "../../../src/store/postgres-pool.ts";
import { PG_LEASE_SQL, PG_SQL, payloadsParam } from "../../../src/store/postgres-queries.ts";
import { createTestSchema, dropTestSchema, postgresUnavailable, TEST_DATABASE_URL } from "../../postgres/pg.ts";
import { newJob, T0 } from "../helpers.ts";
import { planNodes, type PlanNode } from "./plan-nodes.ts";

const unavailable = await postgresUnavailable();
let schema: string;
let store: Store;
let pool: pg.Pool;

beforeEach(async () => {
  if (unavailable !== null) return;
  schema = await createTestSchema();
  store = await openStore({ kind: "postgres", url: TEST_DATABASE_URL, schema });
});

afterEach(async () => {
  if (unavailable !== null) return;
  await Promise.all([store.close(), pool?.end()]);
  await dropTestSchema(schema);
});

/** The backend serving the pool's next query. */
async function backend(): Promise<number> {
  return (await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
}

/** Claims one job as a worker does, by the named statement the pool's connection keeps. */
async function claim(): Promise<pg.QueryResult> {
  return pool.query({ name: "fg_lease_claim", text: PG_LEASE_SQL.claim, values: ["w", T0, 30_000, [], [], 1, 5] });
}

/** Buffers the connection's cached claim reads (rolled back): the plan it would run. */
async function claimReads(): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE fg_lease_claim('w', ${T0}, 30000, '{}', '{}', 1, 5)`);
    await client.query("ROLLBACK");
    const plan = (rows[0]!["QUERY PLAN"] as Array<{ Plan: Record<string, number> }>)[0]!.Plan;
    return plan["Shared Hit Blocks"]! + plan["Shared Read Blocks"]!;
  } finally {
    client.release();
  }
}

/** Queries until another connection than `pid`'s serves them (20 s at most). */
async function replaced(pid: number): Promise<number> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
    const next = await backend();
    if (next !== pid) return next;
  }
  throw new Error(`the connection of backend ${pid} was never replaced`);
}

async function queue(n: number): Promise<void> {
  for (let from = 0; from < n; from += 200) await Promise.all(Array.from({ length: Math.min(200, n - from) }, () => store.createJob(newJob())));
}

describe.skipIf(unavailable !== null)("postgresPool", () => {
  it("replaces a connection once its lifetime passed, between queries, never during one", async () => {
    pool = postgresPool({ url: TEST_DATABASE_URL, schema, maxConnections: 1, connectionLifetimeMs: 300 });
    const first = await backend();
    // A query that outlives the connection's lifetime finishes on it.
    const { rows } = await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid FROM pg_sleep(0.6)");
    expect(rows[0]!.pid).toBe(first);
    expect(await replaced(first)).not.toBe(first);
  });

  it("a claim planned while the table was small is planned again for the backlog that came after", { timeout: 60_000 }, async () => {
    pool = postgresPool({ url: TEST_DATABASE_URL, schema, maxConnections: 1, connectionLifetimeMs: 1_000 });
    // A worker up before the jobs: its claims (and their generic plan, from the sixth) on a table of a few rows.
    await queue(8);
    const planned = await backend();
    for (let i = 0; i < 8; i++) await claim();
    await queue(3_000);
    // Planned for a few rows, this claim read about 400 pages here (every queued job); once the
    // connection is replaced, the same statement is planned for the table as it is.
    await replaced(planned);
    for (let i = 0; i < 8; i++) await claim();
    expect(await claimReads()).toBeLessThan(150);
  });

  it("statements planned while the table was small stay index plans for the backlog that came after, on the same connection", { timeout: 60_000 }, async () => {
    pool = postgresPool({ url: TEST_DATABASE_URL, schema, maxConnections: 1, connectionLifetimeMs: 600_000 });
    expect((await pool.query("SHOW enable_seqscan")).rows[0]).toEqual({ enable_seqscan: "off" });
    await queue(8);
    const planned = await backend();
    const [{ id: ending }] = (await claim()).rows as [{ id: string }];
    // The run's end as a worker writes it (PG_SQL.endJobs, one end, rolled back): generic from the sixth.
    const T = Date.now();
    // biome-ignore format: the 38 parameters in rows (the move, the events, the record and its bytes)
    const oneEnd = [
      [ending], ["succeeded"], ["running"], [false], [null], [true], [T], [false], [null], [false], [null], [false], [null],
      [false], [null], [0], [T], "fg_pool_test", payloadsParam([]), [], payloadsParam([]),
      [randomUUID()], [""], [ending], ["3"], ["a.txt"], ["text"], ["text/plain"], [1], [null], ["a".repeat(64)],
      ["output"], [null], ["[]"], [T], [null], [1], [Buffer.from("a")],
    ];
    const end = async (explain: boolean) => {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        // EXECUTE takes literals: each parameter as node-postgres would send it, quoted.
        const literal = (value: unknown) => (value === null ? "NULL" : client.escapeLiteral(String(prepareValue(value))));
        const text = explain ? `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE fg_pool_ends(${oneEnd.map(literal).join(", ")})` : PG_SQL.endJobs;
        const { rows } = await client.query(explain ? text : { name: "fg_pool_ends", text, values: oneEnd });
        return explain ? planNodes((rows[0]!["QUERY PLAN"] as Array<{ Plan: PlanNode }>)[0]!.Plan) : [];
      } finally {
        await client.query("ROLLBACK");
        client.release();
      }
    };
    for (let i = 0; i < 8; i++) {
      await claim();
      await end(false);
    }
    await queue(3_000);
    expect(await backend()).toBe(planned);
    // Planned for a few rows without sequential scans, the claim reads about 40 pages here
    // (it read about 400 when a whole-table scan was allowed), and the end reads jobs by key.
    expect(await claimReads()).toBeLessThan(150);
    const scans = (await end(true)).filter((n) => n["Relation Name"] === "jobs").map((n) => n["Node Type"]);
    expect(scans.length).toBeGreaterThan(0);
    expect(scans).not.toContain("Seq Scan");
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
