// PostgreSQL for the tests: the machine's server (127.0.0.1:5432, trust auth, user postgres, database `test`,
// or FLOWGATE_TEST_DATABASE_URL). Each test works in its own schema, `fg_test_<random>`, and
// drops it after; nothing else in the shared database is touched.
import { randomBytes } from "node:crypto";
import pg from "pg";

/** The database the tests use. */
export const TEST_DATABASE_URL = process.env.FLOWGATE_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

let reachable: Promise<string | null> | undefined;

/**
 * Why the PostgreSQL tests cannot run here, or null when they can. On CI an unreachable server
 * is a failure, not a reason to skip: CI starts it.
 */
export function postgresUnavailable(): Promise<string | null> {
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query("SELECT 1");
      return null;
    } catch (error) {
      const reason = `PostgreSQL unreachable at ${TEST_DATABASE_URL} (${(error as Error).message}); set FLOWGATE_TEST_DATABASE_URL or start it`;
      if (process.env.CI) throw new Error(reason);
      return reason;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return reachable;
}

/** A fresh schema name of our own. */
export function testSchemaName(): string {
  return `fg_test_${randomBytes(6).toString("hex")}`;
}

/** Runs one statement on the test database on a connection of its own; its rows. */
export async function adminQuery(text: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

/** Drops one of our test schemas with everything in it. */
export async function dropTestSchema(schema: string): Promise<void> {
  if (!/^fg_test_[0-9a-f]+$/.test(schema)) throw new Error(`refusing to drop ${schema}: not a test schema`);
  await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}

/**
 * Registers a store test file's tests against PostgreSQL: selects the store, then imports the
 * file (`load`). Without a reachable server it registers one skipped test that says why.
 */
export async function onPostgres(select: () => void, load: () => Promise<unknown>): Promise<void> {
  const { it } = await import("vitest");
  const unavailable = await postgresUnavailable();
  if (unavailable !== null) {
    it.skip(`skipped: ${unavailable}`, () => undefined);
    return;
  }
  select();
  await load();
}

/** A fresh schema of our own, created; drop it with dropTestSchema. */
export async function createTestSchema(): Promise<string> {
  const schema = testSchemaName();
  await adminQuery(`CREATE SCHEMA ${schema}`);
  return schema;
}

/** The --database-url of a server that keeps its tables in `schema` (search_path in the URL). */
export function schemaUrl(schema: string): string {
  return `${TEST_DATABASE_URL}${TEST_DATABASE_URL.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}
