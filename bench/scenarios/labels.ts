// Listing by label (issue #37) on the SQLite store: a page of 20 of one owner's jobs filtered by
// one label (carried by 1% of the jobs) and by two labels, against the unfiltered page, over
// `labelJobs` jobs (100,000 in a full run). The jobs are written straight into the store's file
// (the same rows createJob writes, in one transaction) so that seeding takes seconds; the store
// is then reopened and read through listJobs, the path of `GET /api/v2/jobs`. Rounds alternate
// which read goes first.
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { openStore, SQLITE_FILE_NAME, type ListJobsOptions, type Store } from "../../src/store/index.ts";
import type { BenchContext } from "../lib/context.ts";
import { judge, type Figure } from "../lib/report.ts";
import { median, medianRatio, nowMs } from "../lib/stats.ts";

const OWNER = "bench";
const READS = 300;

function seed(file: string, jobs: number): void {
  const db = new DatabaseSync(file);
  try {
    db.exec("BEGIN");
    const job = db.prepare(`INSERT INTO jobs (id, owner, status, created_at, expires_at, output_node_ids, workflow, metadata)
      VALUES (?, ?, 'queued', ?, ?, '["2"]', '{"1":{"class_type":"EmptyImage","inputs":{}}}', ?)`);
    const label = db.prepare("INSERT INTO job_labels (owner, key, value, seq) VALUES (?, ?, ?, ?)");
    for (let i = 0; i < jobs; i++) {
      // Every job has a project (100 of them: 1% each) and a run (one of 4).
      const labels = { project: `p${i % 100}`, run: `r${i % 4}` };
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

export async function labelScenarios(ctx: BenchContext): Promise<Figure[]> {
  const { labelJobs, labelRounds } = ctx.sizes;
  const dataDir = await mkdtemp(join(ctx.tmpRoot, "labels-"));
  await (await openStore({ dataDir })).close(); // the schema
  seed(join(dataDir, SQLITE_FILE_NAME), labelJobs);
  const store = await openStore({ dataDir });
  try {
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
      ctx.log(`labels (${label}): ${median(filtered).toFixed(0)} pages/s filtered, ${median(plain).toFixed(0)} unfiltered`);
      figures.push({
        scenario: `A page of 20 of ${labelJobs.toLocaleString("en")} jobs (SQLite), filtered by ${label}`,
        metric: "listJobs pages/s",
        value: median(filtered),
        unit: "pages/s",
        baseline: { name: "the unfiltered page", value: median(plain), unit: "pages/s" },
        ratio: medianRatio(filtered, plain),
        target: { on: "ratio", op: ">=", bound: 0.5 },
        rounds: filtered,
      });
    }
    return figures.map(judge);
  } finally {
    await store.close();
  }
}
