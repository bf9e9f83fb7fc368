// Connections to PostgreSQL: one pg Pool per store or directory, on an optional schema, with
// BIGINT columns read as JavaScript numbers (every one holds an epoch in ms, a seq or a size,
// all far below 2^53). A connection the server drops is discarded and replaced on next use.
import pg from "pg";
import { postgresConnectError } from "./connect-errors.ts";
import { migratePostgres } from "./postgres-schema.ts";

/** Where and how to connect. */
export interface PostgresOptions {
  /** `postgres://user@host:port/database` (node-postgres connection string). */
  url: string;
  /** Schema holding flowgate's tables (default: the server's search_path, normally `public`). Created if missing. */
  schema?: string;
  /** Connections at most (default 10). */
  maxConnections?: number;
  /** Shown in pg_stat_activity (default "flowgate"). */
  applicationName?: string;
  /** Clock for migration bookkeeping only (default Date.now). */
  now?: () => number;
  /**
   * The server ends a session left idle inside a transaction this long (default: never). A process
   * stopped mid-transaction (SIGSTOP, a frozen VM) otherwise keeps its row locks for as long as it
   * stays stopped, and every takeover and expiry sweep, which skip locked rows, passes its jobs by.
   */
  idleInTransactionMs?: number;
  /** A connection is closed once this old, between queries, and a new one opened on next use (default 5 s; see CONNECTION_LIFETIME_MS). */
  connectionLifetimeMs?: number;
}

/**
 * Each named statement is planned once per connection, for the tables as they were then; without
 * an ANALYZE since (autovacuum's, when it comes), PostgreSQL keeps that plan. A worker started
 * before the jobs planned its claims and ends on a table of a few rows (a whole-table scan is the
 * cheap plan there) and kept those plans while a backlog grew: each claim then read every queued
 * job, and the drain ran at half its rate (bench/RESULTS.md). A connection replaced this often
 * plans them again for the tables as they are (INDEX_PLANS keeps whole-table scans out of the
 * plans meanwhile).
 */
const CONNECTION_LIFETIME_MS = 5_000;

/**
 * Every statement of flowgate's is an index walk or a point lookup on a table that grows (the
 * plans test checks them on deep tables). Planned while a table held a few rows (a worker started
 * before the jobs, a new deployment), a whole-table scan is the cheap plan, and a connection keeps
 * it as its generic plan while the table grows: a claim then read every queued job, an end every
 * job, until the connection was replaced (bench/RESULTS.md). Without sequential scans where an index
 * serves, the plan made on a few rows is the one for many.
 */
const INDEX_PLANS = "-c enable_seqscan=off";

/**
 * The session settings a connection starts with (its startup `options`): those of the URL's
 * `options` parameter, then the schema's search_path, then INDEX_PLANS. Set at startup, they cost
 * no query of their own.
 */
function sessionOptions(url: string, schema: string | null): string {
  let fromUrl: string | null = null;
  try {
    fromUrl = new URL(url).searchParams.get("options");
  } catch {
    // Not a URL node-postgres' parser needs to read options from (a bare keyword string, say).
  }
  return [fromUrl, schema === null ? null : `-c search_path=${schema}`, INDEX_PLANS].filter((o) => o !== null && o !== "").join(" ");
}

const INT8_OID = 20;

/** BIGINT as a JavaScript number; every other type as node-postgres reads it. */
export const PG_TYPES = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8_OID && format !== "binary") return (text: string) => Number(text);
    return pg.types.getTypeParser(oid, format as "text");
  },
} as pg.CustomTypesConfig;

/** Whether a name is a plain identifier we can put in search_path unquoted. */
function checkSchema(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new TypeError(`invalid PostgreSQL schema name "${schema}" (use lowercase letters, digits and _)`);
  return schema;
}

/** A pool on the options' database and schema; it connects on first use, and migrates nothing. */
export function postgresPool(options: PostgresOptions): pg.Pool {
  const schema = options.schema === undefined ? null : checkSchema(options.schema);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName ?? "flowgate",
    connectionTimeoutMillis: 10_000,
    maxLifetimeSeconds: (options.connectionLifetimeMs ?? CONNECTION_LIFETIME_MS) / 1000,
    types: PG_TYPES,
    ...(options.idleInTransactionMs === undefined ? {} : { idle_in_transaction_session_timeout: Math.max(1, Math.round(options.idleInTransactionMs)) }),
    options: sessionOptions(options.url, schema),
  });
  // A connection the server ends (restart, pg_terminate_backend, network loss) must not crash the
  // process: the query on it rejects, the pool drops it, and the next query opens a fresh one.
  pool.on("error", () => undefined);
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

/** Opens a pool on the options' database and schema and migrates it; the pool is returned ready. */
export async function openPostgresPool(options: PostgresOptions): Promise<pg.Pool> {
  const schema = options.schema === undefined ? null : checkSchema(options.schema);
  const pool = postgresPool(options);
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw postgresConnectError(error, options.url);
  }
  try {
    try {
      await migratePostgres(client, (options.now ?? Date.now)(), schema);
    } finally {
      client.release();
    }
    return pool;
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
}

/**
 * Runs `work` in one READ COMMITTED transaction on one pooled connection. `opening`, statements
 * without parameters, runs right after BEGIN in its round trip; `work` gets their results.
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient, opened: pg.QueryResult[]) => Promise<T>, opening?: string): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    const begun = (await client.query(opening === undefined ? "BEGIN" : `BEGIN; ${opening}`)) as pg.QueryResult | pg.QueryResult[];
    const result = await work(client, Array.isArray(begun) ? begun.slice(1) : []);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {
      broken = true; // the connection itself failed: do not give it back
    });
    throw error;
  } finally {
    client.release(broken);
  }
}
