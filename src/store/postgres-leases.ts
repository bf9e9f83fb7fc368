// Leased dispatch on PostgreSQL (the JobLeases of src/jobs/job-leases.ts): claims, heartbeats and
// the failure of jobs whose worker stopped renewing. Leases are compared on the database's clock,
// so the processes' own clocks may differ.
import type pg from "pg";
import type { JobLeases } from "../jobs/job-leases.ts";
import { WORKER_LOST } from "../jobs/job-leases.ts";
import { inTransaction, openPostgresPool, type PostgresOptions } from "./postgres-pool.ts";
import { PG_LEASE_SQL } from "./postgres-queries.ts";
import { toJob } from "./postgres.ts";
import type { JobRecord, JobStatus } from "./types.ts";

/** Key of the advisory lock that serializes claims across processes ("clai"): tier limits stay exact. */
const CLAIM_LOCK = 0x636c6169;

/** JobLeases over its own small pool (claims never wait behind the store's queries). */
export class PostgresLeases implements JobLeases {
  readonly #pool: pg.Pool;

  private constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /** Connects (and migrates, like any opener of the database). */
  static async open(options: PostgresOptions): Promise<PostgresLeases> {
    return new PostgresLeases(await openPostgresPool({ maxConnections: 2, applicationName: "flowgate-leases", ...options }));
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
      for (const skip of [busy, full]) {
        const claimed = await client.query(PG_LEASE_SQL.claim, [workerId, startedAt, leaseMs, skip, heldSecrets]);
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
