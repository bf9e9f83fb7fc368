// Listing by label (issue #37) on both stores: a page of 20 of one owner's jobs filtered by one
// label (carried by 1% of the jobs) and by two labels, against the unfiltered page, over
// `labelJobs` jobs (100,000 in a full run). The jobs are written straight into the store's tables
// (the same rows createJob writes: SQLite in one transaction, PostgreSQL with generate_series in a
// bench schema of its own) so that seeding takes seconds; the store is then (re)opened and read
// through listJobs, the path of `GET /api/v2/jobs`. Rounds alternate which read goes first.
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { openStore, SQLITE_FILE_NAME, type ListJobsOptions, type Store } from "../../src/store/index.ts";
import type { BenchContext } from "../lib/context.ts";
import { BENCH_DATABASE_URL, createBenchSchema, dropBenchSchema, postgresUnavailable, schemaUrl } from "../lib/postgres.ts";
import { judge, type Figure } from "../lib/report.ts";
import { median, medianRatio, nowMs } from "../lib/stats.ts";

const OWNER = "bench";
const READS = 300;

/** The labels of the i-th job: a project (100 values, 1% each) and a run (one of 4). */
function labelsOf(i: number): Record<string, string> {
  return { project: `p${i % 100}`, run: `r${i % 4}` };
}

function seed(file: string, jobs: number): void {
  const db = new DatabaseSync(file);
  try {
    db.exec("BEGIN");
    const job = db.prepare(`INSERT INTO jobs (id, owner, status, created_at, expires_at, output_node_ids, workflow, metadata)
      VALUES (?, ?, 'queued', ?, ?, '["2"]', '{"1":{"class_type":"EmptyImage","inputs":{}}}', ?)`);
    const label = db.prepare("INSERT INTO job_labels (owner, key, value, seq) VALUES (?, ?, ?, ?)");
    for (let i = 0; i < jobs; i++) {
      const labels = labelsOf(i);
      const { lastInsertRowid } = job.run(`job-${i}`, OWNER, 1_800_000_000_000 + i, 1_900_000_000_000, JSON.stringify(labels));
      for (const [k, v] of Object.entries(labels)) label.run(OWNER, k, v, Number(lastInsertRowid));
    }
    db.exec("COMMIT");
  } finally {
    db.close();
  }
}

/** Reads per second of the same page. */
async function rate(store: Store, options: Omit<ListJobsOptions, "limit">): Promise<number> {
  const t = nowMs();
  for (let i = 0; i < READS; i++) {
    const page = await store.listJobs(OWNER, { limit: 20, ...options });
    if (page.jobs.length !== 20) throw new Error(`labels: a page of ${page.jobs.length} jobs`);
  }
  return READS / ((nowMs() - t) / 1000);
}

/** The same jobs and labels as `seed`, in PostgreSQL (one statement each, then VACUUM ANALYZE). */
async function seedPostgres(schema: string, jobs: number): Promise<void> {
  const client = new pg.Client({ connectionString: schemaUrl(schema) });
  await client.connect();
  try {
    // seq follows i (an identity, rows in order), so created_at and seq agree as they do in SQLite.
    await client.query(
      `INSERT INTO jobs (id, owner, status, created_at, expires_at, output_node_ids, workflow, metadata)
       SELECT 'job-' || i, $1, 'queued', 1800000000000 + i, 1900000000000, '["2"]'::json,
              '{"1":{"class_type":"EmptyImage","inputs":{}}}'::json,
              json_build_object('project', 'p' || (i % 100), 'run', 'r' || (i % 4))
         FROM generate_series(0, $2::int - 1) AS i ORDER BY i`,
      [OWNER, jobs],
    );
    await client.query(
      `INSERT INTO job_labels (owner, key, value, seq)
       SELECT j.owner, l.key, l.value, j.seq FROM jobs j, json_each_text(j.metadata) l WHERE j.owner = $1`,
      [OWNER],
    );
    // The state autovacuum leaves a table in soon after a bulk insert (visibility map set, so the
    // label index's scans stay index-only; statistics current).
    await client.query("VACUUM ANALYZE jobs");
    await client.query("VACUUM ANALYZE job_labels");
  } finally {
    await client.end();
  }
}

/** Filtered against unfiltered pages on one store; `where` names the store in the figures. */
async function measure(ctx: BenchContext, store: Store, where: string): Promise<Figure[]> {
  const { labelJobs, labelRounds } = ctx.sizes;
  const cases = [
    ["one label (1% of the jobs)", { metadata: { project: "p7" } }],
    ["two labels", { metadata: { project: "p7", run: "r3" } }],
  ] as const;
  await rate(store, {}); // warm
  const figures: Figure[] = [];
  for (const [label, options] of cases) {
    await rate(store, options);
    const filtered: number[] = [];
    const plain: number[] = [];
    for (let r = 0; r < labelRounds; r++) {
      if (r % 2 === 0) {
        filtered.push(await rate(store, options));
        plain.push(await rate(store, {}));
      } else {
        plain.push(await rate(store, {}));
        filtered.push(await rate(store, options));
      }
    }
    ctx.log(`labels, ${where} (${label}): ${median(filtered).toFixed(0)} pages/s filtered, ${median(plain).toFixed(0)} unfiltered`);
    figures.push({
      scenario: `A page of 20 of ${labelJobs.toLocaleString("en")} jobs (${where}), filtered by ${label}`,
      metric: "listJobs pages/s",
      value: median(filtered),
      unit: "pages/s",
      baseline: { name: "the unfiltered page", value: median(plain), unit: "pages/s" },
      ratio: medianRatio(filtered, plain),
      target: { on: "ratio", op: ">=", bound: 0.5 },
      rounds: filtered,
    });
  }
  return figures;
}

async function onSqlite(ctx: BenchContext): Promise<Figure[]> {
  const dataDir = await mkdtemp(join(ctx.tmpRoot, "labels-"));
  await (await openStore({ dataDir })).close(); // the schema
  seed(join(dataDir, SQLITE_FILE_NAME), ctx.sizes.labelJobs);
  const store = await openStore({ dataDir });
  try {
    return await measure(ctx, store, "SQLite");
  } finally {
    await store.close();
  }
}

async function onPostgres(ctx: BenchContext): Promise<Figure[]> {
  const unavailable = await postgresUnavailable();
  if (unavailable !== null) {
    ctx.warn(`labels: PostgreSQL skipped: ${unavailable}`);
    return [];
  }
  const schema = await createBenchSchema();
  try {
    await (await openStore({ kind: "postgres", url: BENCH_DATABASE_URL, schema, maxConnections: 1 })).close(); // the schema
    await seedPostgres(schema, ctx.sizes.labelJobs);
    const store = await openStore({ kind: "postgres", url: BENCH_DATABASE_URL, schema });
    try {
      return await measure(ctx, store, "PostgreSQL");
    } finally {
      await store.close();
    }
  } finally {
    await dropBenchSchema(schema).catch((err: unknown) => ctx.warn(`labels: could not drop schema ${schema}: ${(err as Error).message}`));
  }
}

export async function labelScenarios(ctx: BenchContext): Promise<Figure[]> {
  return [...(await onSqlite(ctx)), ...(await onPostgres(ctx))].map(judge);
}
