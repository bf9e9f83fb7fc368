// Leased dispatch on PostgreSQL (the JobLeases port of src/store/job-leases.ts): claims, heartbeats,
// the takeover of resumable jobs (ComfyUI) whose worker stopped renewing and the failure of the
// others. Leases are compared on the database's clock, so the processes' own clocks may differ.
import type pg from "pg";
import { PARTNER_KEY_LOST, WORKER_LOST } from "../domain/failures.ts";
import type { AdoptedJob, ClaimedJob, JobLeases, OwnerCounts } from "./job-leases.ts";
import { inTransaction, openPostgresPool, postgresPool, type PostgresOptions } from "./postgres-pool.ts";
import { QueuePositions } from "./postgres-positions.ts";
import { CANDIDATES_BEYOND, PG_LEASE_SQL } from "./postgres-queries.ts";
import { toJob } from "./postgres.ts";
import { toWorkflow } from "./rows.ts";
import type { JobRecord, JobStatus } from "./types.ts";

/** Key of the advisory lock that serializes claims with tier limits across processes ("clai"): the limits stay exact. */
const CLAIM_LOCK = 0x636c6169;
/** Statements a claim runs at most when every candidate it found was held by another. */
const MAX_CLAIM_ROUNDS = 8;

/** JobLeases over its own small pool (claims never wait behind the store's queries). */
export class PostgresLeases implements JobLeases {
  readonly #pool: pg.Pool;
  readonly #renewPool: pg.Pool;
  readonly #positionsPool: pg.Pool;
  readonly #positions: QueuePositions;

  private constructor(pool: pg.Pool, options: PostgresOptions) {
    this.#pool = pool;
    // Renewals on a connection of their own: a lease is never lost because its renewal waited
    // behind claims, expiry sweeps or queue reads of this process (opened when first renewing).
    this.#renewPool = postgresPool({ ...options, maxConnections: 1, applicationName: options.applicationName ?? "flowgate-leases" });
    // Positions are read on every poll of a queued job: on connections of their own (opened when
    // first asked, so a worker opens none), claims never wait behind them.
    this.#positionsPool = postgresPool({ ...options, maxConnections: 4, applicationName: `${options.applicationName ?? "flowgate"} positions` });
    this.#positions = new QueuePositions(this.#positionsPool);
  }

  /** Connects (and migrates, like any opener of the database). */
  static async open(options: PostgresOptions): Promise<PostgresLeases> {
    return new PostgresLeases(await openPostgresPool({ maxConnections: 2, applicationName: "flowgate-leases", ...options }), options);
  }

  async claim(
    workerId: string,
    leaseMs: number,
    startedAt: number,
    slots: ((owner: string) => Promise<number>) | undefined,
    heldSecrets: readonly string[],
    onlyHeld = false,
  ): Promise<ClaimedJob | null> {
    return (await this.claimMany(workerId, leaseMs, startedAt, slots, heldSecrets, onlyHeld, 1))[0] ?? null;
  }

  async claimMany(
    workerId: string,
    leaseMs: number,
    startedAt: number,
    slots: ((owner: string) => Promise<number>) | undefined,
    heldSecrets: readonly string[],
    onlyHeld: boolean,
    limit: number,
  ): Promise<ClaimedJob[]> {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError("limit must be a positive integer");
    const claim = (on: pg.Pool | pg.PoolClient, full: string[], wait: boolean, count: number) =>
      on.query({
        name: `fg_lease_claim${onlyHeld ? "_held" : ""}${wait ? "_waiting" : ""}`,
        text: onlyHeld ? (wait ? PG_LEASE_SQL.claimHeldWaiting : PG_LEASE_SQL.claimHeld) : wait ? PG_LEASE_SQL.claimWaiting : PG_LEASE_SQL.claim,
        values: [workerId, startedAt, leaseMs, full, heldSecrets, count, count + CANDIDATES_BEYOND],
      });
    /**
     * Claims on `on`. A claim that found candidates but claimed none found them all held (other
     * claims, a cancel): it claims again waiting for the first one held (one job, so that it
     * holds no row while it waits), until it claims or there is nothing left to claim.
     */
    const attempt = async (on: pg.Pool | pg.PoolClient, full: string[], count: number): Promise<ClaimedJob[]> => {
      for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
        const { rows } = await claim(on, full, round > 0, round > 0 ? 1 : count);
        const claimed = rows.filter((row) => row.id !== null).map((row) => ({ job: toJob(row), epoch: Number(row.lease_epoch), workflow: toWorkflow(row) }));
        if (claimed.length > 0 || Number(rows[0]?.candidates ?? 0) === 0) return claimed;
      }
      return [];
    };
    // Without tier limits, claims of several processes run at once, one statement each.
    if (!slots) return attempt(this.#pool, [], limit);
    return inTransaction(this.#pool, async (client) => {
      // Tier limits: one claim at a time across processes, so that the running counts read here
      // stay true until it commits; one job, as an owner's limit is known only for those counted.
      await client.query("SELECT pg_advisory_xact_lock($1)", [CLAIM_LOCK]);
      const full: string[] = [];
      // Jobs claimed while queued (waiting in ComfyUI under a worker's lease) hold slots as running ones do.
      const { rows } = await client.query<{ owner: string; n: number }>(PG_LEASE_SQL.slotsTakenByOwner);
      for (const r of rows) if (r.n >= (await slots(r.owner))) full.push(r.owner);
      return attempt(client, full, 1);
    });
  }

  async claimQueued(
    workerId: string,
    leaseMs: number,
    slots: ((owner: string) => Promise<number>) | undefined,
    heldSecrets: readonly string[],
    onlyHeld = false,
    resumable = false,
  ): Promise<ClaimedJob | null> {
    return inTransaction(this.#pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1)", [CLAIM_LOCK]);
      // Jobs claimed while queued take their owners' slots as running ones do.
      const full: string[] = [];
      if (slots) {
        const { rows } = await client.query<{ owner: string; n: number }>(PG_LEASE_SQL.slotsTakenByOwner);
        for (const r of rows) if (r.n >= (await slots(r.owner))) full.push(r.owner);
      }
      for (let attempt = 0; attempt < 2; attempt++) {
        const { rows } = await client.query(onlyHeld ? PG_LEASE_SQL.claimQueuedHeld : PG_LEASE_SQL.claimQueued, [
          workerId,
          null,
          leaseMs,
          full,
          heldSecrets,
          1,
          1 + CANDIDATES_BEYOND,
          resumable,
        ]);
        const row = rows.find((r) => r.id !== null);
        if (row !== undefined) return { job: toJob(row), epoch: Number(row.lease_epoch), workflow: toWorkflow(row) };
      }
      return null;
    });
  }

  // Asked on every read of a queued job: from the shared snapshot (src/store/postgres-positions.ts).
  position(jobId: string, read?: JobRecord): Promise<number | null> {
    return this.#positions.position(jobId, read);
  }

  async queueCounts(): Promise<OwnerCounts[]> {
    const { rows } = await this.#pool.query<OwnerCounts>({ name: "fg_lease_queue_counts", text: PG_LEASE_SQL.queueCounts });
    return rows;
  }

  /** Processes of the deployment holding a live lease on a running job now. */
  async busyWorkers(): Promise<number> {
    const { rows } = await this.#pool.query<{ n: number }>(PG_LEASE_SQL.busyWorkers);
    return rows[0]?.n ?? 0;
  }

  async liveCount(owner: string): Promise<number> {
    const { rows } = await this.#pool.query<{ n: number }>({ name: "fg_lease_live_count", text: PG_LEASE_SQL.liveCount, values: [owner] });
    return rows[0]?.n ?? 0;
  }

  async renew(workerId: string, ids: readonly string[], leaseMs: number): Promise<Map<string, JobStatus>> {
    if (ids.length === 0) return new Map();
    const { rows } = await this.#renewPool.query<{ id: string; status: JobStatus }>(PG_LEASE_SQL.renew, [workerId, ids, leaseMs]);
    return new Map(rows.map((r) => [r.id, r.status]));
  }

  async failExpired(completedAt: number, adoptGraceMs = 0): Promise<JobRecord[]> {
    const { rows } = await this.#pool.query(PG_LEASE_SQL.failExpired, [
      completedAt,
      JSON.stringify(WORKER_LOST),
      JSON.stringify(PARTNER_KEY_LOST),
      Math.max(0, Math.round(adoptGraceMs)),
    ]);
    return rows.map(toJob);
  }

  async adoptExpired(workerId: string, leaseMs: number, limit: number): Promise<AdoptedJob[]> {
    const { rows } = await this.#pool.query(PG_LEASE_SQL.adoptExpired, [workerId, leaseMs, limit]);
    return rows.map((row) => ({ job: toJob(row), epoch: Number(row.lease_epoch), secretsGiven: row.secrets_given === true }));
  }

  async heldByOthers(workerId: string, ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.#pool.query<{ id: string }>(PG_LEASE_SQL.heldByOthers, [workerId, ids]);
    return rows.map((r) => r.id);
  }

  async release(workerId: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.#pool.query(PG_LEASE_SQL.release, [workerId, ids]);
  }

  async heldBy(workerId: string): Promise<ClaimedJob[]> {
    const { rows } = await this.#pool.query(PG_LEASE_SQL.heldBy, [workerId]);
    return rows.map((row) => ({ job: toJob(row), epoch: Number(row.lease_epoch) }));
  }

  async notQueued(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.#pool.query<{ id: string }>(PG_LEASE_SQL.stillQueued, [ids]);
    const queued = new Set(rows.map((r) => r.id));
    return ids.filter((id) => !queued.has(id));
  }

  async close(): Promise<void> {
    await Promise.all([this.#pool.end(), this.#renewPool.end(), this.#positionsPool.end()]);
  }
}
