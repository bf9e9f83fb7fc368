// Pooled connections (src/store/postgres-pool.ts): each is replaced once its lifetime passed, so
// that the named statements it planned for the tables as they were are planned again.
import type pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore, type Store } from "../../../src/store/index.ts";
import { postgresPool } from "../../../src/store/postgres-pool.ts";
import { PG_LEASE_SQL } from "../../../src/store/postgres-queries.ts";
import { createTestSchema, dropTestSchema, postgresUnavailable, TEST_DATABASE_URL } from "../../postgres/pg.ts";
import { newJob, T0 } from "../helpers.ts";

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
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
