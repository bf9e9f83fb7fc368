// Leased dispatch on PostgreSQL (src/store/postgres-leases.ts): claims race-free across
// connections, fair share and tier limits read under the claim lock, renewals, expiry.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LeaseLostError, openStore, type Store } from "../../../src/store/index.ts";
import { FairQueue } from "../../../src/jobs/fair-queue.ts";
import { PostgresLeases } from "../../../src/store/postgres-leases.ts";
import { PG_LEASE_SQL } from "../../../src/store/postgres-queries.ts";
import { adminQuery, createTestSchema, dropTestSchema, postgresUnavailable, TEST_DATABASE_URL } from "../../postgres/pg.ts";
import { blobKey, newAsset, newJob, T0 } from "../helpers.ts";
import { planNodes, type PlanNode } from "./plan-nodes.ts";

const unavailable = await postgresUnavailable();
/** Graphs of a kilobyte, as a small real one: a handful of jobs to a page. */
const KILOBYTE_GRAPH = {
  "1": { class_type: "PrimitiveString", inputs: { value: "x".repeat(1_000) } },
  "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
};
let schema: string;
let store: Store;
let a: PostgresLeases;
let b: PostgresLeases;

beforeEach(async () => {
  if (unavailable !== null) return;
  schema = await createTestSchema();
  store = await openStore({ kind: "postgres", url: TEST_DATABASE_URL, schema });
  a = await PostgresLeases.open({ url: TEST_DATABASE_URL, schema });
  b = await PostgresLeases.open({ url: TEST_DATABASE_URL, schema });
});

afterEach(async () => {
  if (unavailable !== null) return;
  await Promise.all([store.close(), a.close(), b.close()]);
  await dropTestSchema(schema);
});

/**
 * Runs `work` on a database of its own, dropped after: rows of finished runs are skipped once no
 * snapshot of the database can see them, so other tests' transactions (in the shared database)
 * must not hold them. A store, a lease store and a client on it.
 */
async function onOwnDatabase(work: (on: { store: Store; leases: PostgresLeases; db: pg.Client }) => Promise<void>): Promise<void> {
  const database = `fg_test_drain_${randomBytes(6).toString("hex")}`;
  await adminQuery(`CREATE DATABASE ${database}`);
  const url = TEST_DATABASE_URL.replace(/\/[^/?]*(\?|$)/, `/${database}$1`);
  const store = await openStore({ kind: "postgres", url });
  const leases = await PostgresLeases.open({ url });
  const db = new pg.Client({ connectionString: url });
  try {
    await db.connect();
    await work({ store, leases, db });
  } finally {
    await db.end().catch(() => undefined);
    await Promise.all([store.close(), leases.close()]);
    await adminQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  }
}

describe.skipIf(unavailable !== null)("PostgresLeases", () => {
  it("two processes claiming at once never take the same job, and take them all", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 12; i++) ids.add((await store.createJob(newJob({ owner: `o${i}` }))).id);
    const claims = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).claim(i % 2 ? "wa" : "wb", 30_000, T0, undefined, [])));
    const taken = claims.filter((j) => j !== null).map((j) => j!.job.id);
    expect(taken.length).toBe(12);
    expect(new Set(taken)).toEqual(ids);
    expect(claims.every((j) => j === null || (j.job.status === "running" && j.epoch === 1))).toBe(true);
  });

  it("a claim of several takes the next ones in the fair order at once; concurrent claims take each job once, none left behind", async () => {
    const local = new FairQueue();
    const owners = ["a", "a", "a", "b", "a", "c", "b", "b", "a", "c", ...Array.from({ length: 30 }, (_, i) => `o${i % 4}`)];
    const ids: string[] = [];
    for (const owner of owners) {
      const job = await store.createJob(newJob({ owner }));
      ids.push(job.id);
      local.push(job.id, owner);
    }
    // What four claims one after another would take: the head of the fair order each time.
    const serial: string[] = [];
    for (let i = 0; i < 4; i++) {
      const next = ids.find((id) => local.position(id) === 0)!;
      serial.push(next);
      local.remove(next);
      local.started(owners[ids.indexOf(next)]!);
    }
    const batch = await a.claimMany("w", 30_000, T0, undefined, [], false, 4);
    expect(batch.map((c) => c.job.id)).toEqual(serial);
    expect(batch.every((c) => c.job.status === "running" && c.epoch === 1)).toBe(true);
    // Each with its graph, as the store keeps it: the run reads none.
    for (const c of batch) expect(c.workflow).toEqual(await store.getJobWorkflow(c.job.id));
    // Two processes claiming at once, in batches, until nothing is left.
    const taken: string[] = [];
    const drain = async (leases: PostgresLeases, worker: string) => {
      for (;;) {
        const claimed = await leases.claimMany(worker, 30_000, T0, undefined, [], false, 3);
        if (claimed.length === 0) return;
        taken.push(...claimed.map((c) => c.job.id));
      }
    };
    await Promise.all([drain(a, "wa"), drain(b, "wb"), drain(a, "wa2"), drain(b, "wb2")]);
    expect(taken.length).toBe(ids.length - 4);
    expect(new Set([...serial, ...taken])).toEqual(new Set(ids));
  });

  it("a renewal never waits behind the process's claims: renewed while its tier-limited claims queue on the claim lock", async () => {
    const app = `flowgate renewals-${schema}`;
    // One connection for its queries, as busy as it gets with one claim waiting.
    const leases = await PostgresLeases.open({ url: TEST_DATABASE_URL, schema, applicationName: app, maxConnections: 1 });
    const blocker = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await blocker.connect();
    try {
      await store.createJob(newJob({ owner: "o1" }));
      const held = (await leases.claim("w", 30_000, T0, undefined, []))!;
      await store.createJob(newJob({ owner: "o2" }));
      // Another process's tier-limited claim holds the claim lock: this one's claim waits on it, holding its pool's connection.
      await blocker.query("BEGIN");
      await blocker.query("SELECT pg_advisory_xact_lock($1)", [0x636c6169]);
      const claim = leases.claim("w", 30_000, T0, async () => 5, []);
      const waiting = async () =>
        Number((await blocker.query("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [app])).rows[0].n);
      while ((await waiting()) < 1) await new Promise((r) => setImmediate(r));
      expect([...(await leases.renew("w", [held.job.id], 30_000))]).toEqual([[held.job.id, "running"]]);
      await blocker.query("COMMIT");
      expect((await claim)!.job.owner).toBe("o2");
    } finally {
      await blocker.end();
      await leases.close();
    }
  });

  it("an owner with nothing running goes first; an owner at its limit is skipped", async () => {
    const first = await store.createJob(newJob({ owner: "busy" }));
    const second = await store.createJob(newJob({ owner: "busy" }));
    const other = await store.createJob(newJob({ owner: "quiet" }));
    expect((await a.claim("w", 30_000, T0, undefined, []))!.job.id).toBe(first.id);
    expect((await a.claim("w", 30_000, T0, undefined, []))!.job.id).toBe(other.id); // before busy's second
    // busy has 1 running and a limit of 1: its queued jobs wait, whoever claims.
    const slots = async (owner: string) => (owner === "busy" ? 1 : 5);
    expect(await b.claim("w2", 30_000, T0, slots, [])).toBeNull();
    expect((await b.claim("w2", 30_000, T0, async () => 5, []))!.job.id).toBe(second.id); // a free slot again
  });

  it("jobs with secrets are claimed only by the process holding them", async () => {
    const secret = await store.createJob(newJob({ secrets_given: true }));
    expect(await a.claim("w", 30_000, T0, undefined, [])).toBeNull();
    expect((await a.claim("w", 30_000, T0, undefined, [secret.id]))!.job.id).toBe(secret.id);
  });

  it("positions count the fair order across processes, as one process's queue does, and claims follow them", async () => {
    // Owner a has one job running; then a burst from a, b and c, interleaved unevenly.
    const running = await store.createJob(newJob({ owner: "a" }));
    expect((await a.claim("w", 30_000, T0, undefined, []))!.job.id).toBe(running.id);
    const local = new FairQueue();
    local.started("a");
    const owners = ["a", "a", "b", "a", "c", "b", "b", "a", "c", "c", "a", "b"];
    const queued: string[] = [];
    for (const owner of owners) {
      const job = await store.createJob(newJob({ owner }));
      queued.push(job.id);
      local.push(job.id, owner);
    }
    const positions = await Promise.all(queued.map((id) => b.position(id)));
    expect(positions).toEqual(queued.map((id) => local.position(id)));
    expect([...positions].sort((x, y) => x! - y!)).toEqual(queued.map((_, i) => i)); // a total order
    expect(await a.position(running.id)).toBeNull(); // not queued
    // Claims take the jobs in that order (nothing ends meanwhile, so no position moves).
    const byPosition = queued
      .map((id, i) => [positions[i]!, id] as const)
      .sort((x, y) => x[0] - y[0])
      .map(([, id]) => id);
    const claimed: string[] = [];
    for (let i = 0; i < queued.length; i++) claimed.push((await (i % 2 ? a : b).claim("w", 30_000, T0, undefined, []))!.job.id);
    expect(claimed).toEqual(byPosition);
  });

  it("counts an owner's live jobs; an API node claims only the secret jobs it holds", async () => {
    const plain = await store.createJob(newJob({ owner: "o" }));
    const secret = await store.createJob(newJob({ owner: "o", secrets_given: true }));
    expect(await a.liveCount("o")).toBe(2);
    expect(await a.claim("api", 30_000, T0, undefined, [], true)).toBeNull();
    expect((await a.claim("api", 30_000, T0, undefined, [secret.id], true))!.job.id).toBe(secret.id);
    expect(await a.claim("api", 30_000, T0, undefined, [secret.id], true)).toBeNull(); // never the others' jobs
    expect((await b.claim("w", 30_000, T0, undefined, []))!.job.id).toBe(plain.id);
    await store.transitionJob(plain.id, ["running"], "succeeded", { completed_at: T0 });
    expect(await a.liveCount("o")).toBe(1);
  });

  it("the queued jobs whose secrets a process holds are leased by it, and fail partner_key_lost when it stops renewing", async () => {
    const held = await store.createJob(newJob({ secrets_given: true }));
    const plain = await store.createJob(newJob());
    expect([...(await a.renew("api", [held.id, plain.id], 30_000))]).toEqual([[held.id, "queued"]]); // a plain job is nobody's
    expect((await b.renew("other", [held.id], 30_000)).size).toBe(0); // not another's to take
    expect(await b.failExpired(T0)).toEqual([]);
    await a.renew("api", [held.id], -1); // the holder gives it up (or dies and stops renewing)
    const [lost, ...rest] = await b.failExpired(T0 + 5);
    expect(rest).toEqual([]);
    expect(lost).toMatchObject({ id: held.id, status: "failed", started_at: T0 + 5, completed_at: T0 + 5 });
    expect(lost!.error?.code).toBe("partner_key_lost");
    expect((await store.getJob(plain.id))!.status).toBe("queued");
  });

  it("renewals report canceling and lost jobs; passed leases end worker_lost (canceling: canceled), once", async () => {
    const one = await store.createJob(newJob());
    const two = await store.createJob(newJob());
    await a.claim("wa", 30_000, T0, undefined, []);
    await a.claim("wa", 30_000, T0, undefined, []);
    await store.transitionJob(two.id, ["running"], "canceling");
    expect([...(await a.renew("wa", [one.id, two.id], 30_000))]).toEqual(
      expect.arrayContaining([
        [one.id, "running"],
        [two.id, "canceling"],
      ]),
    );
    expect((await b.renew("wb", [one.id], 30_000)).size).toBe(0); // not its job
    expect(await b.failExpired(T0)).toEqual([]); // leases hold
    await a.renew("wa", [one.id, two.id], -1); // give them up
    const ended = await b.failExpired(T0 + 1);
    expect(ended.map((j) => [j.id, j.status, j.error?.code ?? null]).sort()).toEqual(
      [
        [one.id, "failed", "worker_lost"],
        [two.id, "canceled", null],
      ].sort(),
    );
    expect(await a.failExpired(T0 + 2)).toEqual([]);
    expect((await a.renew("wa", [one.id, two.id], 30_000)).size).toBe(0);
  });

  it("fences a run's writes with its claim: another worker or epoch, or a job ended since, changes nothing", async () => {
    const job = await store.createJob(newJob());
    const claimed = (await a.claim("wa", 30_000, T0, undefined, []))!;
    expect(claimed.epoch).toBe(1);
    const mine = { workerId: "wa", epoch: 1 };
    const output = () => newAsset({ job_id: job.id, blob_key: blobKey("b") });
    expect(await store.updateProgress(job.id, { value: 0.5, nodes_done: 0, nodes_total: 1 }, mine)).toBe(true);
    await store.addAsset(output(), mine);
    await expect(store.addAsset(output(), { workerId: "wb", epoch: 1 })).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.addAsset(output(), { workerId: "wa", epoch: 2 })).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.updateProgress(job.id, { value: 0.6, nodes_done: 0, nodes_total: 1 }, { workerId: "wb", epoch: 1 })).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    await expect(store.setLogs(job.id, { text: "x", truncated: false, captured_at: T0 }, { workerId: "wa", epoch: 2 })).rejects.toBeInstanceOf(LeaseLostError);
    expect(await store.transitionJob(job.id, ["running"], "succeeded", { completed_at: T0 + 1 }, { fence: { workerId: "wb", epoch: 1 } })).toBeNull();
    // The lease passes and another process ends the job: the run's writes are refused from then on.
    await a.renew("wa", [job.id], -1);
    expect((await b.failExpired(T0 + 2)).map((j) => j.id)).toEqual([job.id]);
    await expect(store.addAsset(output(), mine)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.updateProgress(job.id, { value: 0.7, nodes_done: 0, nodes_total: 1 }, mine)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await store.transitionJob(job.id, ["running", "canceling"], "succeeded", { completed_at: T0 + 3 }, { fence: mine })).toBeNull();
    expect(await store.listJobOutputs(job.id)).toHaveLength(1);
    expect(await a.heldBy("wa")).toEqual([]);
  });

  it("a claim from a deep queue reads its few candidates by seq, never every queued row (custom and generic plans)", { timeout: 60_000 }, async () => {
    for (let i = 0; i < 6; i++) await Promise.all(Array.from({ length: 500 }, () => store.createJob(newJob())));
    const db = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await db.connect();
    try {
      await db.query(`SET search_path = ${schema}`);
      await db.query("ANALYZE jobs"); // the statistics autovacuum leaves
      // $1 worker, $2 started_at, $3 lease ms, $4 owners skipped, $5 secret jobs held, $6 jobs, $7 candidates per owner.
      await db.query(`PREPARE claim_plan AS ${PG_LEASE_SQL.claim}`);
      const scans: string[] = [];
      for (const mode of ["force_custom_plan", "force_generic_plan"]) {
        await db.query("BEGIN");
        await db.query(`SET LOCAL plan_cache_mode = ${mode}`);
        const { rows } = await db.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim_plan('w', ${T0}, 30000, '{}', '{}', 1, 9)`);
        await db.query("ROLLBACK");
        for (const node of planNodes((rows[0]!["QUERY PLAN"] as Array<{ Plan: PlanNode }>)[0]!.Plan))
          if (node["Node Type"] === "Seq Scan") scans.push(`${mode}: ${node["Relation Name"]} (${node["Actual Rows"]} rows)`);
      }
      expect(scans).toEqual([]);
    } finally {
      await db.end();
    }
  });

  it("a claim after a long drain reads about what the first claims read: the rows of finished runs are not visited again", { timeout: 120_000 }, async () => {
    await onOwnDatabase(async ({ store: drained, leases, db }) => {
      const workflow = KILOBYTE_GRAPH;
      for (let i = 0; i < 3; i++) await Promise.all(Array.from({ length: 500 }, () => drained.createJob(newJob({ workflow, output_node_ids: ["2"] }))));
      await db.query(`PREPARE claim_plan AS ${PG_LEASE_SQL.claim}`);
      /**
       * Buffers the next claim reads (rolled back), and its bitmap index scans other than the
       * candidates' lookup by seq (a few live rows): a bitmap scan never marks a dead entry.
       */
      const claimReads = async (): Promise<{ pages: number; plan: string; bitmaps: string[] }> => {
        await db.query("BEGIN");
        const { rows } = await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim_plan('w', ${T0}, 30000, '{}', '{}', 1, 9)`);
        await db.query("ROLLBACK");
        const plan = (rows[0]!["QUERY PLAN"] as Array<{ Plan: PlanNode & Record<string, number> }>)[0]!.Plan;
        const bitmaps = planNodes(plan)
          .filter((node) => node["Node Type"] === "Bitmap Index Scan" && !/^\(seq = ANY /.test(node["Index Cond"] ?? ""))
          .map((node) => `${node["Index Name"]}: ${node["Index Cond"]}`);
        return { pages: plan["Shared Hit Blocks"]! + plan["Shared Read Blocks"]!, plan: JSON.stringify(plan), bitmaps };
      };
      /**
       * Sessions anywhere in the cluster holding a snapshot or a transaction id older than `since`
       * (a snapshot's xmax): while one does, the drained rows' index entries cannot be marked dead,
       * and any plan visits them again.
       */
      const heldSince = async (since: string): Promise<string[]> => {
        const { rows } = await db.query(
          `SELECT datname, pid, state, left(query, 80) AS query FROM pg_stat_activity, pg_current_snapshot() s
            WHERE pid <> pg_backend_pid() AND greatest(age(backend_xmin), age(backend_xid)) > pg_snapshot_xmax(s)::text::bigint - $1::bigint`,
          [since],
        );
        return rows.map((r) => JSON.stringify(r));
      };
      /** Claims and ends `n` jobs, one at a time, as a worker of one slot does. */
      const drain = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const { job } = (await leases.claim("w", 30_000, T0, undefined, []))!;
          await drained.transitionJob(job.id, ["running"], "succeeded", { completed_at: T0 + 1 });
        }
      };
      await drain(100);
      const early = await claimReads();
      const since = String((await db.query("SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x")).rows[0]!.x);
      await drain(1_200);
      // When the running counts were read by a bitmap of every row ever indexed as running (a
      // bitmap scan never marks a dead row's entry), a claim read 200 pages more here, and more
      // the longer the drain. Now it reads 0 to 25 more (dead entries a scan has not marked yet,
      // more of them on a busy host): the bound sits between the two. It holds only while no
      // session in the cluster holds a snapshot from before the drain (another test's long
      // transaction): then every plan reads the dead entries, and only the plan's shape is checked.
      const late = await claimReads();
      expect(late.bitmaps, late.plan).toEqual([]);
      const held = await heldSince(since);
      if (held.length > 0) console.warn(`the claim's pages after the drain are not compared (${late.pages}, early ${early.pages}): ${held.join("; ")}`);
      else expect(late.pages, `early: ${early.plan}\nlate: ${late.plan}`).toBeLessThan(early.pages + 80);
    });
  });

  it("a claim planned without statistics after a drain looks its candidates up by seq, not by reading every queued job", { timeout: 60_000 }, async () => {
    const db = new pg.Client({ connectionString: TEST_DATABASE_URL });
    try {
      await db.connect();
      await db.query(`SET search_path = ${schema}`);
      for (let from = 0; from < 3_000; from += 200) await Promise.all(Array.from({ length: 200 }, () => store.createJob(newJob())));
      for (let ended = 0; ended < 2_000; ) {
        for (const { job } of await a.claimMany("w", 30_000, T0, undefined, [], false, 2)) {
          await store.transitionJob(job.id, ["running"], "succeeded", { completed_at: T0 + 1 });
          ended++;
        }
      }
      // The generic plan (what a named statement runs) for the table as it is now, without
      // statistics (a new schema has none until it is analyzed).
      await db.query("SET plan_cache_mode = force_generic_plan");
      await db.query(`PREPARE claim_plan AS ${PG_LEASE_SQL.claim}`);
      await db.query("BEGIN");
      const { rows } = await db.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim_plan('w', ${T0}, 30000, '{}', '{}', 2, 6)`);
      await db.query("ROLLBACK");
      const picked = planNodes((rows[0]!["QUERY PLAN"] as Array<{ Plan: PlanNode }>)[0]!.Plan).find((node) => node["Subplan Name"] === "CTE picked")!;
      /** How each scan under `node` reads jobs: an index and its condition, or a whole scan. */
      const reads = (node: PlanNode): string[] =>
        planNodes(node).flatMap((n) =>
          n["Node Type"] === "Seq Scan" ? ["Seq Scan"] : n["Index Name"] ? [`${n["Index Name"]}: ${n["Index Cond"] ?? "(whole index)"}`] : [],
        );
      // Through the queued jobs' index (its first column is the owner), as the planner chose
      // without statistics, the rows were found by reading every queued job: a claim cost more
      // the deeper the queue.
      const lookups = reads(picked);
      expect(lookups.length).toBeGreaterThan(0);
      for (const lookup of lookups) expect(lookup).toMatch(/seq = ANY/);
    } finally {
      await db.end();
    }
  });

  it("a claim and an exact position after statistics taken while most jobs were queued find the queued jobs by index, not past the jobs finished since", {
    timeout: 120_000,
  }, async () => {
    await onOwnDatabase(async ({ store, leases, db }) => {
      const workflow = KILOBYTE_GRAPH;
      for (let i = 0; i < 3; i++)
        await Promise.all(Array.from({ length: 500 }, (_, k) => store.createJob(newJob({ owner: `o${k % 3}`, workflow, output_node_ids: ["2"] }))));
      const drain = async (n: number) => {
        for (let ended = 0; ended < n; ) {
          for (const { job } of await leases.claimMany("w", 30_000, T0, undefined, [], false, 3)) {
            await store.transitionJob(job.id, ["running"], "succeeded", { completed_at: T0 + 1 });
            ended++;
          }
        }
      };
      await drain(100);
      // Autovacuum's ANALYZE, taken while most of the table is queued (a backlog just written).
      await db.query("ANALYZE jobs");
      await drain(1_200);
      await db.query(`PREPARE claim_plan AS ${PG_LEASE_SQL.claim}`);
      /**
       * Whether a plan finds owners' queued jobs by the claims' order index (an owner's first ones
       * in its order), and never by walking the primary key and filtering on the status. The
       * pages read are not compared: a snapshot held anywhere in the cluster (another test's
       * transaction) keeps the drained jobs' dead index entries, which both plans then visit.
       */
      const byClaimOrder = (plan: PlanNode, label: string) => {
        const all = planNodes(plan);
        const owners = all.filter((n) => n["Index Name"] === "jobs_queued_claim_order" && /\(owner = /.test(n["Index Cond"] ?? ""));
        const walks = all.filter((n) => n["Index Name"] === "jobs_pkey" && /status = 'queued'/.test(n.Filter ?? ""));
        expect(owners.length, label).toBeGreaterThan(0);
        expect(walks, label).toEqual([]);
      };
      // Custom plans (the first five), then the generic one. Walking the primary key past the
      // 1,300 jobs run since the ANALYZE read about 2,900 pages here.
      for (let i = 0; i < 7; i++) {
        await db.query("BEGIN");
        const { rows } = await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim_plan('w', ${T0}, 30000, '{}', '{}', 1, 9)`);
        await db.query("ROLLBACK");
        const plan = (rows[0]!["QUERY PLAN"] as Array<{ Plan: PlanNode }>)[0]!.Plan;
        byClaimOrder(plan, `claim, execution ${i + 1}`);
      }
      // The exact position of a job near the front reads the owners' queued jobs the same way (it
      // read 3,300 pages here by the primary key).
      const front = (await db.query<{ id: string }>("SELECT id FROM jobs WHERE status = 'queued' ORDER BY seq LIMIT 1 OFFSET 5")).rows[0]!.id;
      await db.query(`PREPARE position_plan AS ${PG_LEASE_SQL.position}`);
      for (let i = 0; i < 7; i++) {
        const { rows } = await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE position_plan('${front}')`);
        const plan = (rows[0]!["QUERY PLAN"] as Array<{ Plan: PlanNode }>)[0]!.Plan;
        byClaimOrder(plan, `position, execution ${i + 1}`);
      }
    });
  });

  it("reads back the live jobs a worker holds, with their epochs", async () => {
    await store.createJob(newJob());
    const claimed = (await a.claim("wa", 30_000, T0, undefined, []))!;
    expect(await b.heldBy("wa")).toEqual([{ job: claimed.job, epoch: 1 }]);
    expect(await b.heldBy("wb")).toEqual([]);
  });

  describe("a job claimed while queued (an engine with a queue of its own)", () => {
    it("stays queued under the claim, is claimed by nobody else, and starts only under that claim", async () => {
      const job = await store.createJob(newJob({ owner: "o" }));
      const next = await store.createJob(newJob({ owner: "o" }));
      const claimed = (await a.claimQueued("wa", 30_000, undefined, []))!;
      expect(claimed.job).toMatchObject({ id: job.id, status: "queued", started_at: null });
      expect(claimed.epoch).toBe(1);
      // Neither kind of claim takes it again: the next job is the next to go.
      expect((await b.claimQueued("wb", 30_000, undefined, []))!.job.id).toBe(next.id);
      expect(await b.claim("wb", 30_000, T0, undefined, [])).toBeNull();
      expect(await a.liveCount("o")).toBe(2);
      expect(await a.queueCounts()).toEqual([{ owner: "o", queued: 2, running: 0 }]);
      // Renewed as this worker's, reported queued; nobody else's to renew.
      expect([...(await a.renew("wa", [job.id], 30_000))]).toEqual([[job.id, "queued"]]);
      expect((await b.renew("wb", [job.id], 30_000)).size).toBe(0);
      expect(await b.heldBy("wa")).toEqual([{ job: claimed.job, epoch: 1 }]);
      // It moves to running only under its claim.
      expect(await store.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 5 }, { fence: { workerId: "wb", epoch: 1 } })).toBeNull();
      expect(await store.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 5 }, { fence: { workerId: "wa", epoch: 2 } })).toBeNull();
      const running = await store.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 5 }, { fence: { workerId: "wa", epoch: 1 } });
      expect(running).toMatchObject({ status: "running", started_at: T0 + 5 });
      expect([...(await a.renew("wa", [job.id], 30_000))]).toEqual([[job.id, "running"]]);
    });

    it("holds a slot of its owner's while it waits", async () => {
      await store.createJob(newJob({ owner: "busy" }));
      const second = await store.createJob(newJob({ owner: "busy" }));
      const other = await store.createJob(newJob({ owner: "quiet" }));
      await a.claimQueued("wa", 30_000, undefined, []);
      const slots = async (owner: string) => (owner === "busy" ? 1 : 5);
      expect((await b.claimQueued("wb", 30_000, slots, []))!.job.id).toBe(other.id);
      expect(await b.claimQueued("wb", 30_000, slots, [])).toBeNull();
      expect((await b.claimQueued("wb", 30_000, async () => 2, []))!.job.id).toBe(second.id);
    });

    it("claimed by a worker whose engine resumes runs: adopted (any status, new epoch) when its lease passes, failed by others only a grace later", async () => {
      const running = await store.createJob(newJob({ owner: "o" }));
      const canceling = await store.createJob(newJob({ owner: "o" }));
      const queued = await store.createJob(newJob({ owner: "o", secrets_given: true }));
      const plain = await store.createJob(newJob({ owner: "o" }));
      const r = (await a.claimQueued("wa", 30_000, undefined, [], false, true))!;
      const c = (await a.claimQueued("wa", 30_000, undefined, [], false, true))!;
      expect((await a.claimQueued("wa", 30_000, undefined, [queued.id], false, true))!.job.id).toBe(queued.id);
      expect((await a.claimQueued("wa", 30_000, undefined, [], false, false))!.job.id).toBe(plain.id); // not resumable
      await store.transitionJob(running.id, ["queued"], "running", { started_at: T0 }, { fence: { workerId: "wa", epoch: r.epoch } });
      await store.transitionJob(canceling.id, ["queued"], "running", { started_at: T0 }, { fence: { workerId: "wa", epoch: c.epoch } });
      await store.transitionJob(canceling.id, ["running"], "canceling");
      // Nothing to adopt while the leases hold.
      expect(await b.adoptExpired("wb", 30_000, 10)).toEqual([]);
      await a.renew("wa", [running.id, canceling.id, queued.id, plain.id], -1);
      // A process that does not adopt waits its grace: only the job that is not resumable fails now.
      expect((await b.failExpired(T0 + 1, 60_000)).map((j) => [j.id, j.error?.code])).toEqual([[plain.id, "worker_lost"]]);
      // The worker itself never adopts its own (it renews them); another takes each once.
      expect(await a.adoptExpired("wa", 30_000, 10)).toEqual([]);
      const adopted = await b.adoptExpired("wb", 30_000, 10);
      expect(adopted.map((x) => [x.job.id, x.job.status, x.epoch, x.secretsGiven]).sort()).toEqual(
        [
          [running.id, "running", 2, false],
          [canceling.id, "canceling", 2, false],
          [queued.id, "queued", 2, true],
        ].sort(),
      );
      expect(await a.adoptExpired("wc", 30_000, 10)).toEqual([]);
      // The adopter holds them now: it renews them, the old holder's writes are refused, and the old holder learns who has them.
      expect([...(await b.renew("wb", [running.id, queued.id], 30_000))].sort()).toEqual(
        [
          [running.id, "running"],
          [queued.id, "queued"],
        ].sort(),
      );
      await expect(store.updateProgress(running.id, { value: 0.5 } as never, { workerId: "wa", epoch: 1 })).rejects.toBeInstanceOf(LeaseLostError);
      expect((await a.renew("wa", [running.id], 30_000)).size).toBe(0);
      expect((await a.heldByOthers("wa", [running.id, canceling.id, queued.id, plain.id])).sort()).toEqual([running.id, canceling.id, queued.id].sort());
      expect(await b.heldByOthers("wb", [running.id])).toEqual([]);
      // The adopted jobs still hold their owner's slots (tiers): three taken, a fourth job waits at a limit of three.
      const fourth = await store.createJob(newJob({ owner: "o" }));
      expect(await a.claimQueued("wc", 30_000, async () => 3, [])).toBeNull();
      expect((await a.claimQueued("wc", 30_000, async () => 4, []))!.job.id).toBe(fourth.id);
      // Past the grace, anyone fails them: the adopter's lease passed too and nobody took them.
      await b.renew("wb", [running.id, canceling.id, queued.id], -1);
      const ended = await a.failExpired(T0 + 2, 0);
      expect(ended.map((j) => [j.id, j.status, j.error?.code ?? null]).sort()).toEqual(
        [
          [running.id, "failed", "worker_lost"],
          [canceling.id, "canceled", null],
          [queued.id, "failed", "worker_lost"],
        ].sort(),
      );
    });

    it("a release gives the leases up now: resumable jobs, started or queued, are taken over at once", async () => {
      const started = await store.createJob(newJob());
      const waiting = await store.createJob(newJob());
      const s = (await a.claimQueued("wa", 30_000, undefined, [], false, true))!;
      await a.claimQueued("wa", 30_000, undefined, [], false, true);
      await store.transitionJob(started.id, ["queued"], "running", { started_at: T0 }, { fence: { workerId: "wa", epoch: s.epoch } });
      await a.release("wb", [started.id, waiting.id]); // not its jobs: nothing happens
      expect(await b.adoptExpired("wb", 30_000, 10)).toEqual([]);
      await a.release("wa", [started.id, waiting.id]);
      // Left to the adopters (the stop handed the prompts over), not failed within the grace.
      expect(await b.failExpired(T0 + 1, 60_000)).toEqual([]);
      expect((await b.adoptExpired("wb", 30_000, 10)).map((x) => x.job.id).sort()).toEqual([started.id, waiting.id].sort());
    });

    it("a row held past its lease and grace (its worker stopped inside a transaction), in each state: the grace counts from when the sweep first finds it free, so the adopters get it", async () => {
      const GRACE = 300;
      const taken = await store.createJob(newJob());
      const running = await store.createJob(newJob());
      const canceling = await store.createJob(newJob());
      const waiting = await store.createJob(newJob()); // claimed while queued, in ComfyUI's queue
      for (const job of [taken, running, canceling, waiting]) {
        const claim = (await a.claimQueued("wa", 30_000, undefined, [], false, true))!;
        if (job === waiting) continue;
        await store.transitionJob(job.id, ["queued"], "running", { started_at: T0 }, { fence: { workerId: "wa", epoch: claim.epoch } });
      }
      await store.transitionJob(canceling.id, ["running"], "canceling");
      const ids = [taken.id, running.id, canceling.id, waiting.id];
      // The job taken over first is the one whose lease passed first (adoptExpired's order).
      await a.renew("wa", [taken.id], -1);
      await a.renew("wa", ids.slice(1), -1);
      // The stopped worker's transaction holds the rows until the lease and the grace have passed.
      const holder = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await holder.connect();
      try {
        await holder.query("BEGIN");
        await holder.query(`SELECT id FROM ${schema}.jobs WHERE id = ANY($1::text[]) FOR UPDATE`, [ids]);
        const pastGrace = `SELECT bool_and(lease_until + $2::bigint < (extract(epoch from clock_timestamp()) * 1000)::bigint) AS past FROM ${schema}.jobs WHERE id = ANY($1::text[])`;
        for (;;) {
          expect(await b.failExpired(T0 + 1, GRACE)).toEqual([]); // held: skipped
          if ((await adminQuery(pastGrace, [ids, GRACE]))[0]!.past === true) break;
        }
        await holder.query("ROLLBACK");
      } finally {
        await holder.end();
      }
      // Free now, the sweep sees the lapse for the first time: it notes it and fails nothing.
      expect(await b.failExpired(T0 + 2, GRACE)).toEqual([]);
      expect((await b.adoptExpired("wb", 30_000, 1)).map((x) => x.job.id)).toEqual([taken.id]);
      // Nobody takes the others: each ends once the grace from that sight has passed.
      const ended: Awaited<ReturnType<PostgresLeases["failExpired"]>> = [];
      while (ended.length < 3) ended.push(...(await b.failExpired(T0 + 3, GRACE)));
      expect(ended.map((j) => [j.id, j.status, j.error?.code ?? null]).sort()).toEqual(
        [
          [running.id, "failed", "worker_lost"],
          [canceling.id, "canceled", null],
          [waiting.id, "failed", "worker_lost"],
        ].sort(),
      );
      const [row] = await adminQuery(`SELECT completed_at IS NULL AS live, worker_id FROM ${schema}.jobs WHERE id = $1`, [taken.id]);
      expect(row).toEqual({ live: true, worker_id: "wb" });
    });

    it("ends worker_lost when its worker stops renewing (not partner_key_lost), once", async () => {
      const job = await store.createJob(newJob({ secrets_given: true }));
      const plain = await store.createJob(newJob());
      expect((await a.claimQueued("api", 30_000, undefined, [job.id], true))!.job.id).toBe(job.id);
      expect(await b.claimQueued("wb", 30_000, undefined, [])).not.toBeNull();
      expect(await b.failExpired(T0)).toEqual([]);
      await a.renew("api", [job.id], -1);
      await b.renew("wb", [plain.id], -1);
      const ended = await b.failExpired(T0 + 7);
      expect(ended.map((j) => [j.id, j.status, j.error?.code, j.started_at]).sort()).toEqual(
        [
          [job.id, "failed", "worker_lost", T0 + 7],
          [plain.id, "failed", "worker_lost", T0 + 7],
        ].sort(),
      );
      expect(await a.failExpired(T0 + 8)).toEqual([]);
    });
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
