// Leased dispatch on PostgreSQL (the JobLeases of src/jobs/job-leases.ts): claims, heartbeats and
// the failure of jobs whose worker stopped renewing. Leases are compared on the database's clock,
// so the processes' own clocks may differ.
import pg from "pg";
import type { JobLeases } from "../jobs/job-leases.ts";
import { WORKER_LOST } from "../jobs/job-leases.ts";
import { inTransaction, openPostgresPool, PG_TYPES, type PostgresOptions } from "./postgres-pool.ts";
import { PG_LEASE_SQL } from "./postgres-queries.ts";
import { PG_STATUS_CHANNEL } from "./postgres-schema.ts";
import { toJob } from "./postgres.ts";
import type { JobRecord, JobStatus } from "./types.ts";

/** Key of the advisory lock that serializes claims across processes ("clai"): tier limits stay exact. */
const CLAIM_LOCK = 0x636c6169;

/** JobLeases over its own small pool (claims never wait behind the store's queries). */
export class PostgresLeases implements JobLeases {
  readonly #pool: pg.Pool;
  readonly #options: PostgresOptions;

  private constructor(pool: pg.Pool, options: PostgresOptions) {
    this.#pool = pool;
    this.#options = options;
  }

  /** Connects (and migrates, like any opener of the database). */
  static async open(options: PostgresOptions): Promise<PostgresLeases> {
    return new PostgresLeases(await openPostgresPool({ maxConnections: 2, applicationName: "flowgate-leases", ...options }), options);
  }

  /**
   * Calls `onChange` with the id of every job of this schema whose status changes, in any process
   * (a trigger notifies), on a connection of its own that is opened again when lost (a change
   * made while it was down is not heard: listeners resynchronize from reads). Returns the stop.
   */
  async listenStatus(onChange: (jobId: string) => void): Promise<() => Promise<void>> {
    let client: pg.Client | null = null;
    let stopped = false;
    let retry: NodeJS.Timeout | undefined;
    const connect = async (): Promise<void> => {
      const c = new pg.Client({
        connectionString: this.#options.url,
        application_name: "flowgate-listen",
        types: PG_TYPES,
        ...(this.#options.schema === undefined ? {} : { options: `-c search_path=${this.#options.schema}` }),
      });
      const again = () => {
        if (stopped || client !== c) return;
        client = null;
        retry = setTimeout(() => void connect().catch(again), 1000);
      };
      client = c;
      c.on("error", again);
      c.on("end", again);
      await c.connect();
      const schema = (await c.query<{ s: string }>("SELECT current_schema() AS s")).rows[0]!.s;
      c.on("notification", (n) => {
        try {
          const change = JSON.parse(n.payload ?? "") as { schema?: string; id?: string };
          if (change.schema === schema && typeof change.id === "string") onChange(change.id);
        } catch {
          // not ours
        }
      });
      await c.query(`LISTEN ${PG_STATUS_CHANNEL}`);
    };
    try {
      await connect();
    } catch (err) {
      stopped = true;
      clearTimeout(retry);
      await (client as pg.Client | null)?.end().catch(() => undefined); // set inside connect
      throw err;
    }
    return async () => {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    };
  }

  async claim(workerId: string, leaseMs: number, startedAt: number, slots: ((owner: string) => Promise<number>) | undefined, heldSecrets: readonly string[]): Promise<JobRecord | null> {
    return inTransaction(this.#pool, async (client) => {
      // One claim at a time across processes: the running counts read here stay true until it commits.
      await client.query("SELECT pg_advisory_xact_lock($1)", [CLAIM_LOCK]);
      const { rows } = await client.query<{ owner: string; n: number }>(PG_LEASE_SQL.runningByOwner);
      const busy = rows.map((r) => r.owner);
      const full: string[] = [];
      if (slots) for (const r of rows) if (r.n >= (await slots(r.owner))) full.push(r.owner);
      // Fair share: an owner with nothing running goes before the owners with jobs running.
      const passes = busy.length === 0 ? [] : [{ sql: PG_LEASE_SQL.claimInWindow, skip: busy }];
      passes.push({ sql: PG_LEASE_SQL.claim, skip: full });
      for (const { sql, skip } of passes) {
        const claimed = await client.query(sql, [workerId, startedAt, leaseMs, skip, heldSecrets]);
        if (claimed.rows[0] !== undefined) return toJob(claimed.rows[0]);
      }
      return null;
    });
  }

  async renew(workerId: string, ids: readonly string[], leaseMs: number): Promise<Map<string, JobStatus>> {
    if (ids.length === 0) return new Map();
    const { rows } = await this.#pool.query<{ id: string; status: JobStatus }>(PG_LEASE_SQL.renew, [workerId, ids, leaseMs]);
    return new Map(rows.map((r) => [r.id, r.status]));
  }

  async failExpired(completedAt: number): Promise<JobRecord[]> {
    const { rows } = await this.#pool.query(PG_LEASE_SQL.failExpired, [completedAt, JSON.stringify(WORKER_LOST)]);
    return rows.map(toJob);
  }

  async notQueued(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.#pool.query<{ id: string }>(PG_LEASE_SQL.stillQueued, [ids]);
    const queued = new Set(rows.map((r) => r.id));
    return ids.filter((id) => !queued.has(id));
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
