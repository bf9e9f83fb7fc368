// `npm run chaos`: the faults of the published PostgreSQL queue comparisons, on a deployment of
// real processes (an API node, two workers, blobs in an S3 bucket) over a PostgreSQL cluster of
// this run's own (the shared server is never touched): made with pg_createcluster when run as
// root (PostgreSQL itself refuses to run as root), else with initdb and pg_ctl as this user, so
// no scenario needs root. Without PostgreSQL's server programs it says so and runs nothing. Jobs are submitted at a
// steady rate through each fault; per scenario it reports jobs lost (acknowledged, then absent),
// run twice (more than one output record), stuck (not ended 60 s after the fault), the time from
// the fault's end until the completion rate is back to 80 % of the rate before it, and the dead
// tuples of the jobs table after. Prints a Markdown table (bench/RESULTS.md keeps one).
//
//   npm run chaos [-- --only restart,crash-stop] [-- --rate 8]
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { startBucketProxy, type BucketProxy } from "./lib/bucket-proxy.ts";
import { startLocalBucket, type LocalBucket } from "./lib/local-bucket.ts";

const ROOT = join(import.meta.dirname, "..");
const PG_VERSION = "15";
const { values: args } = parseArgs({ options: { only: { type: "string" }, rate: { type: "string", default: "8" } } });
const RATE = Number(args.rate); // submissions a second
const FAULT_MS = 10_000;
const LEASE = "2s";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

const PG_BIN = `/usr/lib/postgresql/${PG_VERSION}/bin`;
const AS_ROOT = process.getuid?.() === 0;

/**
 * Why no cluster can be made here, or null. As root: pg_createcluster (the cluster runs as the
 * postgres user). Else: initdb and pg_ctl as this user, which needs no root.
 */
function clusterUnavailable(): string | null {
  if (AS_ROOT) {
    return existsSync("/usr/bin/pg_createcluster") ? null : "run as root, it needs pg_createcluster (postgresql-common); run it as another user to use initdb";
  }
  return existsSync(join(PG_BIN, "initdb")) ? null : `it needs PostgreSQL ${PG_VERSION}'s server programs (${PG_BIN}/initdb, pg_ctl)`;
}

/** A PostgreSQL cluster of this run's own. */
class Cluster {
  readonly name = `flowgate_chaos_${process.pid}`;
  port = 0;
  /** The data directory, when made with initdb (not root). */
  dir: string | null = null;
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }
  async create(): Promise<void> {
    this.port = await freePort();
    if (AS_ROOT) {
      execFileSync("pg_createcluster", [PG_VERSION, this.name, "--port", String(this.port), "--", "--auth=trust"], { stdio: "ignore" });
    } else {
      this.dir = await mkdtemp(join(tmpdir(), "flowgate-chaos-pg-"));
      execFileSync(join(PG_BIN, "initdb"), ["-D", this.dir, "-U", "postgres", "--auth=trust"], { stdio: "ignore" });
    }
    this.ctl("start");
  }
  /** pg_ctlcluster's actions (`start`, `stop -m immediate`, `restart -m fast`), on either kind. */
  ctl(action: "start" | "stop" | "restart", ...options: string[]): void {
    if (this.dir === null) return void execFileSync("pg_ctlcluster", [PG_VERSION, this.name, action, ...options], { stdio: "ignore" });
    const server = action === "stop" ? [] : ["-l", join(this.dir, "log"), "-o", `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1`];
    execFileSync(join(PG_BIN, "pg_ctl"), ["-D", this.dir, "-w", ...options, ...server, action], { stdio: "ignore" });
  }
  async drop(): Promise<void> {
    try {
      if (this.dir === null) execFileSync("pg_dropcluster", [PG_VERSION, this.name, "--stop"], { stdio: "ignore" });
      else {
        execFileSync(join(PG_BIN, "pg_ctl"), ["-D", this.dir, "-m", "immediate", "stop"], { stdio: "ignore" });
      }
    } catch {
      // already gone
    }
    if (this.dir !== null) await rm(this.dir, { recursive: true, force: true });
  }
}

/** A flowgate child process. */
function flowgate(cmd: "serve" | "worker", flags: string[], env: Record<string, string>): { child: ChildProcess; out: () => string } {
  const child = spawn(process.execPath, [join(ROOT, "bin/flowgate.js"), cmd, ...flags], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => void (out = (out + d).slice(-20_000)));
  child.stderr!.on("data", (d: Buffer) => void (out = (out + d).slice(-20_000)));
  return { child, out: () => out };
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await sleep(100);
  }
}

interface Scenario {
  name: string;
  /** Starts the fault and ends it (resolves once healed). */
  run(d: Deployment): Promise<void>;
}

class Deployment {
  api = "";
  workers: Array<ReturnType<typeof flowgate>> = [];
  proxy!: BucketProxy;
  bucket!: LocalBucket;
  readonly dirs: string[] = [];
  readonly cluster = new Cluster();
  db!: pg.Pool;
  apiNode!: ReturnType<typeof flowgate>;

  async open(): Promise<void> {
    await this.cluster.create();
    this.db = new pg.Pool({ connectionString: this.cluster.url, max: 2 });
    this.db.on("error", () => undefined);
    this.bucket = await startLocalBucket();
    this.proxy = await startBucketProxy(this.bucket.endpoint);
    const migrate = flowgate("serve", [...(await this.flags()), "--port", "0", "--no-dispatch"], this.bucket.env);
    this.apiNode = migrate;
    await until(() => /listening on (http:\/\/\S+)/.test(migrate.out()), "the API node listening");
    this.api = /listening on (http:\/\/\S+)/.exec(migrate.out())![1]!;
    for (let i = 0; i < 2; i++) await this.startWorker();
  }

  async flags(): Promise<string[]> {
    const dir = await mkdtemp(join(tmpdir(), "flowgate-chaos-"));
    this.dirs.push(dir);
    return [
      "--database-url",
      this.cluster.url,
      "--data-dir",
      dir,
      "--blob-store",
      `${this.bucket.url}chaos/`,
      "--s3-endpoint",
      this.proxy.endpoint,
      "--lease",
      LEASE,
    ];
  }

  async startWorker(): Promise<ReturnType<typeof flowgate>> {
    const w = flowgate("worker", await this.flags(), this.bucket.env);
    this.workers.push(w);
    await until(() => w.out().includes("worker claiming jobs"), "a worker claiming");
    return w;
  }

  async close(): Promise<void> {
    for (const p of [this.apiNode, ...this.workers]) p?.child.kill("SIGKILL");
    await this.db?.end().catch(() => undefined);
    await this.proxy?.close();
    await this.bucket?.stop();
    await this.cluster.drop();
    for (const dir of this.dirs) await rm(dir, { recursive: true, force: true });
  }

  async query<T extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await this.db.query<T>(text, params)).rows;
  }
}

/** Submits jobs at RATE a second until stopped; every acknowledged id is kept. */
function submitter(d: Deployment, label: string) {
  const acked: string[] = [];
  let refused = 0;
  let stop = false;
  let seq = 0;
  const loop = (async () => {
    while (!stop) {
      const graph = {
        "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: seq++ } },
        "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "chaos" } },
      };
      const sent = fetch(`${d.api}/api/v2/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ workflow: graph, metadata: { chaos: label } }),
      })
        .then(async (r) => (r.status === 201 ? acked.push(((await r.json()) as { id: string }).id) : refused++))
        .catch(() => refused++);
      void sent;
      await sleep(1000 / RATE);
    }
  })();
  return {
    acked,
    /** Submissions answered other than 201, or not answered. */
    get refused() {
      return refused;
    },
    async stop() {
      stop = true;
      await loop;
    },
  };
}

/** Jobs of `label` that ended within the window (ms) before now. */
async function endedWithin(d: Deployment, label: string, ms: number): Promise<number> {
  const rows = await d
    .query<{ n: string }>(`SELECT count(*) AS n FROM jobs WHERE metadata::jsonb ->> 'chaos' = $1 AND completed_at > $2`, [label, Date.now() - ms])
    .catch(() => [{ n: "0" }]);
  return Number(rows[0]!.n);
}

/** Jobs not ended yet, of every scenario. */
async function unfinished(d: Deployment): Promise<number> {
  const rows = await d.query<{ n: string }>(`SELECT count(*) AS n FROM jobs WHERE completed_at IS NULL`).catch(() => [{ n: "-1" }]);
  return Number(rows[0]!.n);
}

async function measure(d: Deployment, s: Scenario): Promise<Record<string, string | number>> {
  // A backlog left by the scenario before (a rate above what this host drains) would count as
  // this one's stuck jobs: each starts on an empty queue.
  await until(async () => (await unfinished(d)) === 0, "the queue drained before the scenario", 300_000).catch(() =>
    process.stderr.write(`chaos: ${s.name} starts with jobs of earlier scenarios still queued\n`),
  );
  const label = `${s.name}-${Date.now()}`;
  const load = submitter(d, label);
  await sleep(6_000);
  const steady = (await endedWithin(d, label, 5_000)) / 5;
  await s.run(d);
  const healed = Date.now();
  let recovered: number | null = null;
  while (Date.now() - healed < 60_000) {
    await sleep(500);
    if ((await endedWithin(d, label, 2_000)) / 2 >= 0.8 * steady && Date.now() - healed >= 2_000) {
      recovered = Date.now() - healed - 2_000;
      break;
    }
  }
  await load.stop();
  const ids = load.acked;
  // Settle: every acknowledged job ends, or counts as stuck after 60 s.
  const settled = async () =>
    Number(
      (await d.query<{ n: string }>(`SELECT count(*) AS n FROM jobs WHERE id = ANY($1) AND completed_at IS NOT NULL`, [ids]).catch(() => [{ n: "-1" }]))[0]!.n,
    ) === ids.length;
  await until(settled, "every job ended", 60_000).catch(() => undefined);
  const rows = await d.query<{ id: string; status: string; code: string | null; outputs: string }>(
    `SELECT j.id, j.status, j.error::jsonb ->> 'code' AS code, (SELECT count(*) FROM assets a WHERE a.job_id = j.id) AS outputs FROM jobs j WHERE j.id = ANY($1)`,
    [ids],
  );
  const ends: Record<string, number> = {};
  for (const r of rows) if (r.status !== "succeeded") ends[r.code ?? r.status] = (ends[r.code ?? r.status] ?? 0) + 1;
  const dead = await d.query<{ n: string }>(`SELECT coalesce(sum(n_dead_tup), 0) AS n FROM pg_stat_user_tables`);
  return {
    scenario: s.name,
    acknowledged: ids.length,
    "refused (5xx, no answer)": load.refused,
    lost: ids.length - rows.length,
    twice: rows.filter((r) => Number(r.outputs) > 1).length,
    stuck: rows.filter((r) => !["succeeded", "failed", "canceled", "expired"].includes(r.status)).length,
    "not succeeded": Object.entries(ends)
      .map(([k, n]) => `${n} ${k}`)
      .join(", "),
    "recovery (s)": recovered === null ? "> 60" : (recovered / 1000).toFixed(1),
    "steady (jobs/s)": steady.toFixed(1),
    "dead tuples after": Number(dead[0]!.n),
  };
}

/** Holds `n` connections open (idle) for the fault's length: the server's connection slots run out. */
async function exhaustConnections(d: Deployment): Promise<void> {
  const max = Number((await d.query<{ max_connections: string }>("SHOW max_connections"))[0]!.max_connections);
  const clients: pg.Client[] = [];
  for (let i = 0; i < max; i++) {
    const c = new pg.Client({ connectionString: d.cluster.url });
    c.on("error", () => undefined);
    if (
      !(await c.connect().then(
        () => true,
        () => false,
      ))
    )
      break;
    clients.push(c);
  }
  await sleep(FAULT_MS);
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
}

/** A session that locks queued jobs and sits idle in its transaction. */
async function idleInTransaction(d: Deployment): Promise<void> {
  const c = new pg.Client({ connectionString: d.cluster.url });
  await c.connect();
  await c.query("BEGIN");
  await c.query("SELECT id FROM jobs WHERE status = 'queued' ORDER BY seq LIMIT 20 FOR UPDATE");
  await sleep(FAULT_MS);
  await c.query("ROLLBACK");
  await c.end();
}

async function killWorker(d: Deployment): Promise<void> {
  const w = d.workers.shift()!;
  w.child.kill("SIGKILL");
  await sleep(2_000);
  await d.startWorker();
}

const SCENARIOS: Scenario[] = [
  { name: "restart", run: async (d) => d.cluster.ctl("restart", "-m", "fast") },
  {
    name: "crash-stop",
    run: async (d) => {
      d.cluster.ctl("stop", "-m", "immediate");
      await sleep(5_000);
      d.cluster.ctl("start");
    },
  },
  {
    name: "backend-kill",
    run: async (d) => void (await d.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'flowgate%'")),
  },
  { name: "pool-exhaustion", run: exhaustConnections },
  { name: "idle-in-transaction", run: idleInTransaction },
  { name: "worker-crash", run: killWorker },
  {
    name: "repeated-kills",
    run: async (d) => {
      for (let i = 0; i < 4; i++) {
        await killWorker(d);
        await sleep(2_000); // a kill every 4 s
      }
    },
  },
  {
    name: "bucket-killed",
    run: async (d) => {
      d.proxy.cut();
      await sleep(FAULT_MS);
      d.proxy.heal();
    },
  },
  {
    name: "bucket-frozen",
    run: async (d) => {
      d.proxy.hold(() => true);
      await sleep(FAULT_MS);
      d.proxy.drop();
    },
  },
];

const only = args.only?.split(",");
const unavailable = clusterUnavailable();
if (unavailable !== null) {
  console.error(`chaos: every scenario runs over a PostgreSQL cluster of its own, and none can be made here: ${unavailable}. Nothing was run.`);
  process.exit(0);
}
process.stderr.write(`chaos: a cluster of its own, made with ${AS_ROOT ? "pg_createcluster (as root)" : "initdb and pg_ctl (as this user)"}\n`);
const d = new Deployment();
const results: Array<Record<string, string | number>> = [];
try {
  await d.open();
  for (const s of SCENARIOS.filter((x) => !only || only.includes(x.name))) {
    process.stderr.write(`chaos: ${s.name}...\n`);
    const r = await measure(d, s);
    results.push(r);
    process.stderr.write(`chaos: ${JSON.stringify(r)}\n`);
  }
} finally {
  await d.close();
}
const cols = Object.keys(results[0] ?? {});
console.log(`| ${cols.join(" | ")} |\n| ${cols.map(() => "---").join(" | ")} |`);
for (const r of results) console.log(`| ${cols.map((c) => r[c]).join(" | ")} |`);
