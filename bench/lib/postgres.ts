// PostgreSQL for the bench: the machine's server (FLOWGATE_BENCH_DATABASE_URL, else the tests'
// FLOWGATE_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test). Every run works in
// schemas of its own, `fg_bench_<random>`, dropped at the end; nothing else is touched.
import { randomBytes } from "node:crypto";
import pg from "pg";

/** The database the bench uses. */
export const BENCH_DATABASE_URL =
  process.env.FLOWGATE_BENCH_DATABASE_URL ?? process.env.FLOWGATE_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Runs one statement on a connection of its own; its rows. */
async function adminQuery(text: string): Promise<Array<Record<string, unknown>>> {
  const client = new pg.Client({ connectionString: BENCH_DATABASE_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

/** Why the PostgreSQL scenario cannot run here, or null when it can. */
export async function postgresUnavailable(): Promise<string | null> {
  try {
    await adminQuery("SELECT 1");
    return null;
  } catch (error) {
    return `PostgreSQL unreachable at ${withoutPassword(BENCH_DATABASE_URL)} (${(error as Error).message}); set FLOWGATE_BENCH_DATABASE_URL or start it`;
  }
}

/** A fresh schema of our own, created. */
export async function createBenchSchema(): Promise<string> {
  const schema = `fg_bench_${randomBytes(6).toString("hex")}`;
  await adminQuery(`CREATE SCHEMA ${schema}`);
  return schema;
}

/** Drops one of our schemas with everything in it. */
export async function dropBenchSchema(schema: string): Promise<void> {
  if (!/^fg_bench_[0-9a-f]+$/.test(schema)) throw new Error(`refusing to drop ${schema}: not a bench schema`);
  await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}

/** The --database-url of a server that keeps its tables in `schema` (search_path in the URL). */
export function schemaUrl(schema: string): string {
  return `${BENCH_DATABASE_URL}${BENCH_DATABASE_URL.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/** The URL as it may be printed. */
export function withoutPassword(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}

/**
 * A fresh database of our own, `fg_bench_db_<random>`, created: `pg_stat_database` then counts its
 * workload alone (the bench's transactions per job). Drop it with dropBenchDatabase.
 */
export async function createBenchDatabase(): Promise<string> {
  const name = `fg_bench_db_${randomBytes(6).toString("hex")}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  return name;
}

/** Drops one of our databases, ending its connections. */
export async function dropBenchDatabase(name: string): Promise<void> {
  if (!/^fg_bench_db_[0-9a-f]+$/.test(name)) throw new Error(`refusing to drop ${name}: not a bench database`);
  await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/** The URL of the bench's server, on database `name`. */
export function databaseUrl(name: string): string {
  return BENCH_DATABASE_URL.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
}

/**
 * The transactions committed in database `name` so far, once none of its backends is left (each
 * reports its counts as it exits; before, at most once a second), read from another database.
 */
export async function committedOnceIdle(name: string, deadlineMs = 60_000): Promise<number> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const [row] = await adminQuery(
      `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = '${name}')::bigint AS commits,
        (SELECT count(*) FROM pg_stat_activity WHERE datname = '${name}')::int AS backends`,
    );
    if (Number(row!.backends) === 0) return Number(row!.commits);
    if (Date.now() > deadline) throw new Error(`database ${name} still has ${String(row!.backends)} backends`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
