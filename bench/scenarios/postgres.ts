// PostgreSQL (issue #18, scale-out), against the SQLite store in the same run. Skipped, with a
// warning, when no PostgreSQL server answers (bench/lib/postgres.ts says where it looks).
//
// Throughput: two flowgate children, alike but for the store (the SQLite file of the data dir;
// `--database-url` on a fresh schema), each holding its one slot with a long job as in the http
// scenario, so submissions stay queued and the engine never competes. Measured in interleaved
// rounds, each pair back to back in swapped order every other round, the queues emptied (canceled)
// before each round: durable submissions (the http scenario's POST, with an Idempotency-Key), GET
// of a finished 4-output job, and GET of a queued job (the one read that reaches the database
// every time: a finished job's view is cached in the process).
// Deep queues, in the same rounds: two more children, one per store, each with `queueDepth` jobs
// seeded behind its long job before it starts (bench/lib/seed.ts: the SQLite store, set-based
// INSERTs on PostgreSQL): GET of the queued job at position queueDepth/2 (checked before
// measuring), judged against the same GET with an empty queue on PostgreSQL and against the SQLite
// deep queue; and submissions into the deep PostgreSQL queue, against the empty one.
//
// Fan-out across processes: an API node (`--no-dispatch`, a server child) holds `pgStreams` SSE
// streams on a job that a real `flowgate worker` process runs; a second API node cancels it. The
// time runs from the client sending that cancel to each stream reading the `canceling` frame: the
// second node's handling (its read of the job, the UPDATE and COMMIT), the commit's notification
// (LISTEN/NOTIFY, carrying the job's row), the first node's fan-out. The client's clock is the origin
// because it always precedes the commit: the committing node's own clock (its event bus publishing
// the change, sent over IPC; CLOCK_MONOTONIC is shared by the processes of one host) marks when
// that node heard its COMMIT return, which on a busy host came after the other node's streams had
// the frame (a negative latency in one round). That figure is reported alongside.
// Baseline, in the same rounds: the same fan-out in one process on SQLite (cancel and streams on
// the process that runs the job), timed the same way.
//
// Dispatch beside graphile-worker (bench/lib/graphile.ts), on the same database in the same run:
// submit → running, one job at a time (flowgate: POST /api/v2/jobs to an API node, run by a
// `flowgate worker`, until the node's hosted socket says `execution_start`; graphile-worker:
// addJob until its no-op task starts in a runner process), and trivial jobs completed per second
// by one and by two workers of the same concurrency, the jobs queued before the workers start,
// with the database transactions each job cost: each tool drains in a database of its own, counted
// by pg_stat_database from the queue written until every process of the drain exited.
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { uuidv7 } from "../../src/domain/ids.ts";
import { openStore } from "../../src/store/index.ts";
import { startWorker, type WorkerProcess } from "../lib/cli-worker.ts";
import { spawnServer, type ServerChild } from "../lib/child.ts";
import type { BenchContext } from "../lib/context.ts";
import { blockingGraph, fourOutputGraph, threeNodeGraph } from "../lib/graphs.ts";
import { graphileUtils, startGraphileRunner, type GraphileRunner } from "../lib/graphile.ts";
import { pairedRounds, request, submit, submitLoad, waitJob, type LoadSpec } from "../lib/http.ts";
import { JobSocket } from "../lib/job-socket.ts";
import {
  committedOnceIdle,
  createBenchDatabase,
  createBenchSchema,
  databaseUrl,
  dropBenchDatabase,
  dropBenchSchema,
  postgresUnavailable,
  schemaUrl,
} from "../lib/postgres.ts";
import { judge, type Figure } from "../lib/report.ts";
import { seedPostgresQueue, seedSqliteQueue, type SeededQueue } from "../lib/seed.ts";
import { SsePool } from "../lib/sse-pool.ts";
import { hrNs, median, medianRatio, percentile, sleep } from "../lib/stats.ts";

/** Far above anything the bench queues: the bound must never answer 429 here. */
const QUEUE_LIMIT = 100_000_000;
const MARKER = '"status":"canceling"';
const ms = (ns: bigint) => Number(ns) / 1e6;

export async function postgresScenarios(ctx: BenchContext): Promise<Figure[]> {
  const unavailable = await postgresUnavailable();
  if (unavailable !== null) {
    ctx.warn(`postgres: skipped: ${unavailable}`);
    return [];
  }
  const schemas: string[] = [];
  const schema = async () => {
    const s = await createBenchSchema();
    schemas.push(s);
    return s;
  };
  try {
    const figures = [
      ...(await throughput(ctx, await schema(), await schema())),
      ...(await fanOut(ctx, await schema())),
      ...(await dispatch(ctx, await schema(), await schema())),
    ];
    return figures.map(judge);
  } finally {
    for (const s of schemas) await dropBenchSchema(s).catch((err: unknown) => ctx.warn(`postgres: could not drop schema ${s}: ${(err as Error).message}`));
  }
}

// --- throughput ------------------------------------------------------------------------------

type Store = "sqlite" | "pg";
type Measure = `${"getFinished" | "getQueued" | "submit" | "getQueuedDeep"}-${Store}` | "submitDeep-pg";
/**
 * Each figure and its baseline run back to back, each group's order reversed every other round:
 * every compared pair is adjacent (PostgreSQL and SQLite; deep and empty queue).
 */
const GROUPS: Measure[][] = [
  ["getFinished-sqlite", "getFinished-pg"],
  ["getQueued-sqlite", "getQueued-pg", "getQueuedDeep-pg", "getQueuedDeep-sqlite"],
  ["submit-sqlite", "submit-pg", "submitDeep-pg"],
];

interface Prepared {
  server: ServerChild;
  finishedPath: string;
  finishedBytes: number;
  probeId: string;
}

/** A finished 4-output job, a blocking job in the one slot, and a queued probe behind it. */
async function prepare(server: ServerChild): Promise<Prepared> {
  const fin = await submit(server.url, fourOutputGraph());
  const finished = await waitJob(server.url, fin.id, (j) => j.status === "succeeded" || j.status === "failed", "the end");
  if (finished.status !== "succeeded" || finished.outputs.length !== 4)
    throw new Error(`${server.name}: the 4-output job ended ${finished.status} with ${finished.outputs.length} outputs`);
  const block = await submit(server.url, blockingGraph(3600));
  await waitJob(server.url, block.id, (j) => j.status === "running", "running");
  const probe = await submit(server.url, threeNodeGraph());
  const finishedPath = `/api/v2/jobs/${fin.id}`;
  const sample = await request(server.url, "GET", finishedPath);
  if (sample.status !== 200) throw new Error(`${server.name}: GET ${finishedPath} answered ${sample.status}`);
  const queued = await request(server.url, "GET", `/api/v2/jobs/${probe.id}`);
  if (queued.status !== 200 || queued.body.status !== "queued") throw new Error(`${server.name}: the probe is not queued: ${queued.text.slice(0, 300)}`);
  return { server, finishedPath, finishedBytes: sample.text.length, probeId: probe.id };
}

/** A server started on a seeded deep queue, once its blocker runs and its probe reads its place. */
async function deepServer(
  ctx: BenchContext,
  name: string,
  dataDir: string,
  config: Record<string, unknown>,
  seeded: SeededQueue,
  depth: number,
): Promise<ServerChild> {
  const server = await spawnServer({ kind: "flowgate", name, dataDir, config: { concurrency: 1, queueLimit: QUEUE_LIMIT, ...config } });
  try {
    await waitJob(server.url, seeded.blockerId, (j) => j.status === "running", "running");
    // The place is read before any figure is: a wrong one would make the figure meaningless.
    await waitJob(
      server.url,
      seeded.probeId,
      (j) => j.status === "queued" && j.queue_position === seeded.probeIndex,
      `the probe queued at ${seeded.probeIndex}`,
    );
    const counts = await server.counts();
    if (counts.queued < depth) throw new Error(`${name}: the queue holds ${counts.queued} jobs, expected ${depth}`);
    ctx.log(`postgres: ${name} reads the probe at queue_position ${seeded.probeIndex.toLocaleString("en-US")} of ${counts.queued.toLocaleString("en-US")}`);
    return server;
  } catch (err) {
    await server.stop().catch(() => undefined);
    throw err;
  }
}

async function throughput(ctx: BenchContext, schema: string, deepSchema: string): Promise<Figure[]> {
  const s = ctx.sizes;
  const children: ServerChild[] = [];
  try {
    const depth = s.queueDepth;
    ctx.log(`postgres: seeding ${depth.toLocaleString("en-US")} queued jobs on SQLite and on PostgreSQL`);
    let t0 = Date.now();
    const sqliteDeepDir = await mkdtemp(join(ctx.tmpRoot, "pg-sqlite-deep-"));
    const sqliteSeed = await seedSqliteQueue(sqliteDeepDir, depth);
    const sqliteSeedS = (Date.now() - t0) / 1000;
    t0 = Date.now();
    const pgSeed = await seedPostgresQueue(deepSchema, depth);
    ctx.log(`postgres: seeded SQLite in ${sqliteSeedS.toFixed(1)} s, PostgreSQL in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    // Both started at once (each loads its queue at boot); every one that started is stopped at the end.
    const pgDeepDir = await mkdtemp(join(ctx.tmpRoot, "pg-pg-deep-"));
    const deep = await Promise.allSettled([
      deepServer(ctx, "flowgate-sqlite-deep", sqliteDeepDir, {}, sqliteSeed, depth),
      deepServer(ctx, "flowgate-postgres-deep", pgDeepDir, { databaseUrl: schemaUrl(deepSchema) }, pgSeed, depth),
    ]);
    for (const d of deep) if (d.status === "fulfilled") children.push(d.value);
    for (const d of deep) if (d.status === "rejected") throw d.reason;
    const [sqliteDeep, pgDeep] = children as [ServerChild, ServerChild];

    ctx.log("postgres: starting flowgate on SQLite and on PostgreSQL");
    const common = { concurrency: 1, queueLimit: QUEUE_LIMIT };
    const sqliteServer = await spawnServer({
      kind: "flowgate",
      name: "flowgate-sqlite",
      dataDir: await mkdtemp(join(ctx.tmpRoot, "pg-sqlite-")),
      config: common,
    });
    children.push(sqliteServer);
    const pgServer = await spawnServer({
      kind: "flowgate",
      name: "flowgate-postgres",
      dataDir: await mkdtemp(join(ctx.tmpRoot, "pg-pg-")),
      config: { ...common, databaseUrl: schemaUrl(schema) },
    });
    children.push(pgServer);
    const servers: Record<Store, Prepared> = { sqlite: await prepare(sqliteServer), pg: await prepare(pgServer) };

    const C = s.connections;
    const postTo = (url: string) => submitLoad(url, C);
    const spec = (m: Measure): Omit<LoadSpec, "durationS"> => {
      if (m === "getQueuedDeep-pg") return { url: pgDeep.url, path: `/api/v2/jobs/${pgSeed.probeId}`, connections: C };
      if (m === "getQueuedDeep-sqlite") return { url: sqliteDeep.url, path: `/api/v2/jobs/${sqliteSeed.probeId}`, connections: C };
      if (m === "submitDeep-pg") return postTo(pgDeep.url);
      const p = servers[m.endsWith("-pg") ? "pg" : "sqlite"];
      if (m.startsWith("getFinished")) return { url: p.server.url, path: p.finishedPath, connections: C };
      if (m.startsWith("getQueued")) return { url: p.server.url, path: `/api/v2/jobs/${p.probeId}`, connections: C };
      return postTo(p.server.url);
    };
    // Both queues start each round empty but for the probe: what the last round queued is canceled.
    const emptyTheQueues = async () => {
      const t0 = Date.now();
      const n = await Promise.all((["sqlite", "pg"] as const).map((k) => servers[k].server.call<number>({ op: "cancel-queued", keep: [servers[k].probeId] })));
      if (n[0]! + n[1]! > 0)
        ctx.log(`postgres: canceled ${n[0]} queued jobs on SQLite and ${n[1]} on PostgreSQL in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      await sleep(100);
    };

    const results = await pairedRounds(ctx, "postgres", GROUPS, spec, emptyTheQueues);
    // The probe kept its place through the rounds (the deep queue only grew behind it).
    for (const [server, seeded] of [
      [pgDeep, pgSeed],
      [sqliteDeep, sqliteSeed],
    ] as const) {
      const after = await request(server.url, "GET", `/api/v2/jobs/${seeded.probeId}`);
      if (after.body?.queue_position !== seeded.probeIndex)
        ctx.warn(`postgres ${server.name}: the probe read queue_position ${after.body?.queue_position} after the rounds, expected ${seeded.probeIndex}`);
    }
    const pgDeepFinal = await pgDeep.counts();

    const rate = (m: Measure) => results[m].map((r) => r.rate);
    const lat = (m: Measure, k: "p50" | "p99") => median(results[m].map((r) => r[k]));
    const pair = (what: "getFinished" | "getQueued" | "submit") => ({
      value: median(rate(`${what}-pg`)),
      baseline: median(rate(`${what}-sqlite`)),
      ratio: medianRatio(rate(`${what}-pg`), rate(`${what}-sqlite`)),
      rounds: rate(`${what}-pg`),
    });
    const post = pair("submit");
    const fin = pair("getFinished");
    const queued = pair("getQueued");
    const vs = (a: Measure, b: Measure) => ({ value: median(rate(a)), baseline: median(rate(b)), ratio: medianRatio(rate(a), rate(b)), rounds: rate(a) });
    const deepGetVsEmpty = vs("getQueuedDeep-pg", "getQueued-pg");
    const deepGetVsSqlite = vs("getQueuedDeep-pg", "getQueuedDeep-sqlite");
    const deepSubmit = vs("submitDeep-pg", "submit-pg");
    const deepLabel = `PostgreSQL: queue depth ${depth.toLocaleString("en-US")}`;
    const probeText = `queue_position ${pgSeed.probeIndex.toLocaleString("en-US")}`;
    return [
      {
        scenario: "PostgreSQL: POST /api/v2/jobs, 3-node graph, durable commit, Idempotency-Key",
        metric: "jobs/s",
        value: post.value,
        unit: "jobs/s",
        baseline: { name: "same POST, SQLite store", value: post.baseline, unit: "jobs/s" },
        ratio: post.ratio,
        target: { on: "ratio", op: ">=", bound: 0.5 },
        rounds: post.rounds,
        note: `every 201 after PostgreSQL's COMMIT (synchronous_commit), ${C} connections, ${s.httpDurationS} s per round; latency p50/p99 ${lat("submit-pg", "p50")}/${lat("submit-pg", "p99")} ms (SQLite ${lat("submit-sqlite", "p50")}/${lat("submit-sqlite", "p99")} ms)`,
      },
      {
        scenario: "PostgreSQL: GET /api/v2/jobs/{id}, finished job, 4 outputs",
        metric: "requests/s",
        value: fin.value,
        unit: "req/s",
        baseline: { name: "same GET, SQLite store", value: fin.baseline, unit: "req/s" },
        ratio: fin.ratio,
        target: { on: "ratio", op: ">=", bound: 0.5 },
        rounds: fin.rounds,
        note: `${servers.pg.finishedBytes}-byte answer (SQLite ${servers.sqlite.finishedBytes}), ${C} connections; a finished job's view is cached in the process, so this GET reads no database`,
      },
      {
        scenario: "PostgreSQL: GET /api/v2/jobs/{id}, queued job",
        metric: "requests/s",
        value: queued.value,
        unit: "req/s",
        baseline: { name: "same GET, SQLite store", value: queued.baseline, unit: "req/s" },
        ratio: queued.ratio,
        rounds: queued.rounds,
        note: "reads the job row on every request",
      },
      {
        scenario: `${deepLabel}: GET of a queued job (${probeText})`,
        metric: "requests/s",
        value: deepGetVsEmpty.value,
        unit: "req/s",
        baseline: { name: "same GET, empty queue, PostgreSQL", value: deepGetVsEmpty.baseline, unit: "req/s" },
        ratio: deepGetVsEmpty.ratio,
        target: { on: "ratio", op: ">=", bound: 0.8 },
        rounds: deepGetVsEmpty.rounds,
        note: `the place from the shared position snapshot (src/store/postgres-positions.ts); the empty queue's probe is at 0, counted exactly; ${C} connections`,
      },
      {
        scenario: `${deepLabel}: GET of a queued job (${probeText})`,
        metric: "requests/s against SQLite",
        value: deepGetVsSqlite.value,
        unit: "req/s",
        baseline: { name: `same GET and queue, SQLite`, value: deepGetVsSqlite.baseline, unit: "req/s" },
        ratio: deepGetVsSqlite.ratio,
        target: { on: "ratio", op: ">=", bound: 0.5 },
        rounds: deepGetVsSqlite.rounds,
      },
      {
        scenario: `${deepLabel}: submit`,
        metric: "jobs/s",
        value: deepSubmit.value,
        unit: "jobs/s",
        baseline: { name: "submit, empty queue, PostgreSQL", value: deepSubmit.baseline, unit: "jobs/s" },
        ratio: deepSubmit.ratio,
        target: { on: "ratio", op: ">=", bound: 0.8 },
        rounds: deepSubmit.rounds,
        note: `the durable POST with an Idempotency-Key; the deep queue ended at ${pgDeepFinal.queued.toLocaleString("en-US")} jobs`,
      },
    ];
  } finally {
    await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
  }
}

// --- fan-out across processes ----------------------------------------------------------------

/** Milliseconds from the cancel request to each stream's frame. */
interface FanOut {
  p50: number;
  p99: number;
  last: number;
  /** p99 from the canceling process publishing the change (its clock), not from the request. */
  p99FromPublish: number;
}

/**
 * Opens `n` streams on `streams`' job, cancels the job through `canceler`, and times each stream's
 * `canceling` frame from the client sending the cancel; waits for every stream to end (`canceled`).
 */
async function fanOutOnce(streams: ServerChild, canceler: ServerChild, jobId: string, n: number, warn: (m: string) => void): Promise<FanOut> {
  const url = new URL(streams.url);
  const path = `/api/v2/jobs/${jobId}/events`;
  // Warm the path (JIT, first allocations) with a few streams first, as the sse scenario does.
  const warm = new SsePool(url.hostname, Number(url.port));
  await warm.open(Math.min(50, n), path);
  await warm.close();
  const pool = new SsePool(url.hostname, Number(url.port));
  try {
    await pool.open(n, path);
    const arrivals = pool.arm(MARKER);
    const watch = await canceler.watchTransition(jobId, "canceling");
    // A read first, so that the cancel goes out on a warm keep-alive connection.
    const before = await request(canceler.url, "GET", `/api/v2/jobs/${jobId}`);
    if (before.body?.status !== "running") throw new Error(`the job is not running before the cancel: ${before.text.slice(0, 300)}`);
    const requested = hrNs();
    const res = await request(canceler.url, "POST", `/api/v2/jobs/${jobId}/cancel`);
    if (res.status !== 200 || res.body.status !== "canceling")
      throw new Error(`cancel through ${canceler.name} answered ${res.status}: ${res.text.slice(0, 300)}`);
    const { published } = await watch.at;
    const times = await arrivals;
    const lat = times.map((t) => ms(t - requested));
    if (!(await pool.ended())) warn(`postgres ${streams.name}: not every stream ended after the terminal frame`);
    if (pool.error) warn(`postgres ${streams.name}: ${pool.error.message}`);
    return {
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      last: Math.max(...lat),
      p99FromPublish: percentile(
        times.map((t) => ms(t - published)),
        99,
      ),
    };
  } finally {
    await pool.close();
  }
}

/** A running job to stream: submitted through `submitter`, running (wherever) once `reader` says so. */
async function runningJob(submitter: ServerChild, reader: ServerChild): Promise<string> {
  const job = await submit(submitter.url, blockingGraph(600));
  await waitJob(reader.url, job.id, (j) => j.status === "running", "running");
  return job.id as string;
}

async function fanOut(ctx: BenchContext, schema: string): Promise<Figure[]> {
  const n = ctx.sizes.pgStreams;
  const url = schemaUrl(schema);
  const children: ServerChild[] = [];
  let worker: WorkerProcess | null = null;
  try {
    ctx.log("postgres: starting two API nodes (--no-dispatch), a flowgate worker, and the SQLite baseline");
    const blobDir = await mkdtemp(join(ctx.tmpRoot, "pg-blobs-"));
    const apiConfig = { databaseUrl: url, dispatch: false, blobDir, maxStreamsPerCaller: 10_000_000, queueLimit: QUEUE_LIMIT };
    const streams = await spawnServer({ kind: "flowgate", name: "api-streams", dataDir: await mkdtemp(join(ctx.tmpRoot, "pg-api1-")), config: apiConfig });
    children.push(streams);
    const canceler = await spawnServer({ kind: "flowgate", name: "api-cancel", dataDir: await mkdtemp(join(ctx.tmpRoot, "pg-api2-")), config: apiConfig });
    children.push(canceler);
    worker = await startWorker([
      "--database-url",
      url,
      "--data-dir",
      await mkdtemp(join(ctx.tmpRoot, "pg-worker-")),
      "--blob-dir",
      blobDir,
      "--concurrency",
      "4",
      "--queue-limit",
      String(QUEUE_LIMIT),
    ]);
    const single = await spawnServer({
      kind: "flowgate",
      name: "single-sqlite",
      dataDir: await mkdtemp(join(ctx.tmpRoot, "pg-single-")),
      config: { maxStreamsPerCaller: 10_000_000, concurrency: 4, queueLimit: QUEUE_LIMIT },
    });
    children.push(single);

    const cross: FanOut[] = [];
    const base: FanOut[] = [];
    const warn = (m: string) => ctx.warn(m);
    const crossRound = async () => {
      const id = await runningJob(canceler, streams);
      // The job runs in the worker: neither API node runs anything.
      for (const api of [streams, canceler]) if ((await api.counts()).running !== 0) throw new Error(`${api.name} runs a job; API nodes must not`);
      cross.push(await fanOutOnce(streams, canceler, id, n, warn));
    };
    const baseRound = async () => {
      const id = await runningJob(single, single);
      base.push(await fanOutOnce(single, single, id, n, warn));
    };
    for (let round = 1; round <= ctx.sizes.pgStreamRounds; round++) {
      for (const run of round % 2 === 1 ? [crossRound, baseRound] : [baseRound, crossRound]) await run();
      const c = cross.at(-1)!;
      const b = base.at(-1)!;
      ctx.log(
        `postgres: round ${round}: ${n} streams; across processes p99 ${c.p99.toFixed(1)} ms (p50 ${c.p50.toFixed(1)}, last ${c.last.toFixed(1)}, from the canceling node's publish ${c.p99FromPublish.toFixed(1)}); one SQLite process p99 ${b.p99.toFixed(1)} ms (last ${b.last.toFixed(1)}, from its publish ${b.p99FromPublish.toFixed(1)})`,
      );
    }

    const col = (rs: FanOut[], k: keyof FanOut) => rs.map((r) => r[k]);
    const label = `PostgreSQL: SSE fan-out across processes, ${n.toLocaleString("en-US")} streams on an API node, job run by a flowgate worker`;
    const baseline = (k: keyof FanOut) => ({ name: "same fan-out in one process, SQLite", value: median(col(base, k)), unit: "ms" });
    return [
      {
        scenario: label,
        metric: "transition → stream p99",
        value: median(col(cross, "p99")),
        unit: "ms",
        baseline: baseline("p99"),
        ratio: medianRatio(col(cross, "p99"), col(base, "p99")),
        target: { on: "value", op: "<=", bound: 250 },
        rounds: col(cross, "p99"),
        note: `from the client sending the cancel to a second API node to each stream reading \`canceling\` (that node's UPDATE, LISTEN/NOTIFY with the job's row, the fan-out); p50 ${median(col(cross, "p50")).toFixed(1)} ms; from the canceling node publishing the change p99 ${median(col(cross, "p99FromPublish")).toFixed(1)} ms (one process ${median(col(base, "p99FromPublish")).toFixed(1)} ms)`,
      },
      {
        scenario: label,
        metric: "transition → last stream",
        value: median(col(cross, "last")),
        unit: "ms",
        baseline: baseline("last"),
        ratio: medianRatio(col(cross, "last"), col(base, "last")),
        rounds: col(cross, "last"),
      },
    ];
  } finally {
    await Promise.all([...children.map((c) => c.stop().catch(() => undefined)), worker?.stop().catch(() => undefined)]);
  }
}

// --- dispatch beside graphile-worker ---------------------------------------------------------

/** Jobs one worker process runs at once, the same for both tools. */
const DISPATCH_CONCURRENCY = 4;
/** Completions before the rate is timed: workers started together still reach full speed apart. */
const DRAIN_SKIP = 0.2;
/** Jobs a worker up before the backlog runs first (see flowgateDrain). */
const WORKERS_FIRST_WARM_JOBS = 40;
/** Bound on any wait of the dispatch figures. */
const DISPATCH_DEADLINE_MS = 120_000;

/** Waits until `done()` holds (polled), or throws naming `what` after `ms`. */
async function until(done: () => boolean, what: string, ms = DISPATCH_DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`postgres dispatch: timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** `p`, or an error naming `what` at the deadline. */
async function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`postgres dispatch: timed out waiting for ${what}`)), DISPATCH_DEADLINE_MS);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Jobs completed per second between the DRAIN_SKIP share of `ends` (ns, in order) and the last. */
function drainRate(ends: readonly bigint[]): number {
  const from = Math.max(1, Math.ceil(ends.length * DRAIN_SKIP));
  const seconds = Number(ends.at(-1)! - ends[from - 1]!) / 1e9;
  return seconds > 0 ? (ends.length - from) / seconds : Number.NaN;
}

/** One drain: jobs completed per second, and database transactions per job. */
interface Drain {
  rate: number;
  perJob: number;
}

/** graphile-worker's side: runner processes whose starts and successes resolve waits by payload n. */
class GraphileSide {
  readonly runners: GraphileRunner[] = [];
  readonly #starts = new Map<number, (t: bigint) => void>();
  readonly #successes = new Map<number, (t: bigint) => void>();
  /** Successes in arrival order (ns, the runners' clocks), for completion rates. */
  readonly ends: bigint[] = [];
  readonly #schema: string;
  readonly #url: string | undefined;
  constructor(schema: string, url?: string) {
    this.#schema = schema;
    this.#url = url;
  }

  async start(k: number): Promise<void> {
    const handlers = {
      onStart: (n: number, t: bigint) => this.#starts.get(n)?.(t),
      onSuccess: (n: number, t: bigint) => {
        this.ends.push(t);
        this.#successes.get(n)?.(t);
      },
    };
    this.runners.push(
      ...(await Promise.all(Array.from({ length: k }, () => startGraphileRunner(this.#schema, DISPATCH_CONCURRENCY, handlers, undefined, this.#url)))),
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.runners.splice(0).map((r) => r.stop()));
  }

  /** Resolves with job n's start and success (register before adding it). */
  expect(n: number): { started: Promise<bigint>; succeeded: Promise<bigint> } {
    const started = new Promise<bigint>((r) => this.#starts.set(n, r));
    const succeeded = new Promise<bigint>((r) => this.#successes.set(n, r));
    void started.then(() => this.#starts.delete(n));
    void succeeded.then(() => this.#successes.delete(n));
    return { started, succeeded };
  }
}

async function dispatch(ctx: BenchContext, schema: string, graphileSchema: string): Promise<Figure[]> {
  const s = ctx.sizes;
  const url = schemaUrl(schema);
  let api: ServerChild | null = null;
  let socket: JobSocket | null = null;
  const workers: WorkerProcess[] = [];
  const gw = new GraphileSide(graphileSchema);
  const utils = await graphileUtils(graphileSchema);
  /** Databases of the drains' own (created below), dropped at the end. */
  const databases: string[] = [];
  try {
    ctx.log(
      `postgres: dispatch: an API node (--no-dispatch) and flowgate workers; graphile-worker runners in schema ${graphileSchema}; concurrency ${DISPATCH_CONCURRENCY} each`,
    );
    const blobDir = await mkdtemp(join(ctx.tmpRoot, "pg-dispatch-blobs-"));
    api = await spawnServer({
      kind: "flowgate",
      name: "api-dispatch",
      dataDir: await mkdtemp(join(ctx.tmpRoot, "pg-dispatch-api-")),
      config: { databaseUrl: url, dispatch: false, blobDir, queueLimit: QUEUE_LIMIT },
    });
    const apiUrl = api.url;
    socket = await JobSocket.open(apiUrl);
    const jobs = socket;
    const startWorkers = async (k: number, databaseUrl = url, workerBlobs = blobDir) => {
      const dirs = await Promise.all(Array.from({ length: k }, () => mkdtemp(join(ctx.tmpRoot, "pg-dispatch-worker-"))));
      const started = await Promise.all(
        dirs.map((dir) =>
          startWorker([
            "--database-url",
            databaseUrl,
            "--data-dir",
            dir,
            "--blob-dir",
            workerBlobs,
            "--concurrency",
            String(DISPATCH_CONCURRENCY),
            "--queue-limit",
            String(QUEUE_LIMIT),
          ]),
        ),
      );
      workers.push(...started);
    };
    const stopWorkers = async () => {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
    };

    // One job at a time, each submitted once the previous one ended: ms from the request to the start.
    const flowgateOnce = async (): Promise<number> => {
      const t0 = hrNs();
      const res = await request(apiUrl, "POST", "/api/v2/jobs", { workflow: threeNodeGraph() });
      if (res.status !== 201) throw new Error(`postgres dispatch: submit answered ${res.status}: ${res.text.slice(0, 300)}`);
      const id = res.body.id as string;
      // The node's first word of the job is its start, or its end when it read the job only once
      // the run was over (then it sends no execution_start): either way, when it heard the start.
      const started = await within(jobs.at("first", id), `the start of flowgate job ${id}`);
      await within(jobs.at("success", id), `the end of flowgate job ${id}`);
      return ms(started - t0);
    };
    let n = 0;
    const graphileOnce = async (): Promise<number> => {
      const job = gw.expect(++n);
      const t0 = hrNs();
      await utils.addJob("noop", { n });
      const started = await within(job.started, `the start of graphile-worker job ${n}`);
      await within(job.succeeded, `the end of graphile-worker job ${n}`);
      return ms(started - t0);
    };
    const series = async (once: () => Promise<number>, count: number): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < count; i++) out.push(await once());
      return out;
    };

    // --- submit → running ---
    await startWorkers(1);
    await gw.start(1);
    const warm = ctx.quick ? 5 : 20;
    await series(flowgateOnce, warm);
    await series(graphileOnce, warm);
    const fgLat: number[][] = [];
    const gwLat: number[][] = [];
    for (let round = 1; round <= s.dispatchRounds; round++) {
      const fg = async () => fgLat.push(await series(flowgateOnce, s.dispatchJobs));
      const gwr = async () => gwLat.push(await series(graphileOnce, s.dispatchJobs));
      for (const run of round % 2 === 1 ? [fg, gwr] : [gwr, fg]) await run();
      ctx.log(
        `postgres: dispatch round ${round}: submit → running p50/p99 flowgate ${percentile(fgLat.at(-1)!, 50).toFixed(1)}/${percentile(fgLat.at(-1)!, 99).toFixed(1)} ms, graphile-worker ${percentile(gwLat.at(-1)!, 50).toFixed(1)}/${percentile(gwLat.at(-1)!, 99).toFixed(1)} ms`,
      );
    }
    await stopWorkers();
    await gw.stop();

    // --- completions per second and transactions per job: N jobs queued, then k workers started together ---
    // Each tool drains in a database of its own, so that pg_stat_database counts its workload
    // alone: from the queue written (every backend gone) until the last process exited.
    const N = s.drainJobs;
    const fgDb = await createBenchDatabase();
    databases.push(fgDb);
    const gwDb = await createBenchDatabase();
    databases.push(gwDb);
    const fgUrl = databaseUrl(fgDb);
    /** Writes `n` jobs through the store, a hundred at a time; their ids in order. */
    const queueJobs = async (n: number, url = fgUrl): Promise<string[]> => {
      const store = await openStore({ kind: "postgres", url });
      const ids: string[] = [];
      try {
        const now = Date.now();
        for (let from = 0; from < n; from += 100) {
          const batch = Array.from({ length: Math.min(100, n - from) }, () => uuidv7(now));
          await Promise.all(
            batch.map((id) =>
              store.createJob({ id, owner: "", created_at: now, expires_at: now + 3_600_000, workflow: threeNodeGraph(), output_node_ids: ["3"] }),
            ),
          );
          ids.push(...batch);
        }
      } finally {
        await store.close();
      }
      return ids;
    };
    /**
     * `k` workers drain N jobs. Queued first (the default), the queue is written before the count
     * starts: submissions are not the runs' cost. `workersFirst`: in a database of its own, the
     * API node and the workers start on an empty table and run a few jobs (their statements are
     * planned then, for a table of a few rows), and the N jobs come after, while they run; only
     * the rate is read then.
     */
    const flowgateDrain = async (k: number, workersFirst = false): Promise<Drain> => {
      const dbName = workersFirst ? await createBenchDatabase() : fgDb;
      if (workersFirst) databases.push(dbName);
      const url = databaseUrl(dbName);
      let ids = workersFirst ? [] : await queueJobs(N);
      // A blob store of the drain's own, as a deployment has one per database: every process
      // sweeps its store's orphan files at start, and another database's files would be its orphans.
      const drainBlobs = await mkdtemp(join(ctx.tmpRoot, "pg-drain-blobs-"));
      const before = await committedOnceIdle(dbName);
      const node = await spawnServer({
        kind: "flowgate",
        name: `api-drain-${k}`,
        dataDir: await mkdtemp(join(ctx.tmpRoot, "pg-drain-api-")),
        config: { databaseUrl: url, dispatch: false, blobDir: drainBlobs, queueLimit: QUEUE_LIMIT },
      });
      // Polled on a connection of its own: each poll is one transaction, counted out. The database
      // holds these jobs alone, so a poll counts its live jobs: a poll by the N ids planned and
      // hashed the whole list, 20 times a second, on the CPUs the drain runs on.
      const db = new pg.Client({ connectionString: url });
      let polls = 0;
      let rows: Array<{ status: string; completed_at: number }> = [];
      const drained = async () => {
        const deadline = Date.now() + DISPATCH_DEADLINE_MS + 100 * N;
        for (;;) {
          polls++;
          const { rows: left } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM jobs WHERE status IN ('queued', 'running', 'canceling')");
          if (left[0]!.n === 0) return;
          if (Date.now() > deadline) throw new Error(`postgres dispatch: timed out waiting for ${N} flowgate jobs to end`);
          await sleep(50);
        }
      };
      try {
        await db.connect();
        await startWorkers(k, url, drainBlobs);
        if (workersFirst) {
          await queueJobs(WORKERS_FIRST_WARM_JOBS, url);
          await drained();
          ids = await queueJobs(N, url);
        }
        await drained();
        polls++;
        ({ rows } = await db.query<{ status: string; completed_at: number }>("SELECT status, completed_at FROM jobs WHERE id = ANY($1) ORDER BY completed_at", [
          ids,
        ]));
      } finally {
        await stopWorkers();
        await node.stop();
        await db.end().catch(() => undefined);
      }
      const after = await committedOnceIdle(dbName);
      const failed = rows.filter((r) => r.status !== "succeeded").length;
      if (failed > 0 || rows.length !== N) ctx.warn(`postgres dispatch: ${failed} of ${rows.length} flowgate jobs did not succeed (${N} queued)`);
      return {
        rate: drainRate(rows.filter((r) => r.completed_at !== null).map((r) => BigInt(r.completed_at) * 1_000_000n)),
        perJob: (after - before - polls) / N,
      };
    };
    const graphileDrain = async (k: number): Promise<Drain> => {
      const side = new GraphileSide(graphileSchema, databaseUrl(gwDb));
      const queue = await graphileUtils(graphileSchema, databaseUrl(gwDb));
      try {
        await queue.addJobs(Array.from({ length: N }, () => ({ identifier: "noop", payload: { n: ++n } })));
      } finally {
        await queue.release();
      }
      const before = await committedOnceIdle(gwDb);
      try {
        await side.start(k);
        await until(() => side.ends.length >= N, `${N} graphile-worker jobs to succeed`, DISPATCH_DEADLINE_MS + 100 * N);
      } finally {
        await side.stop();
      }
      const after = await committedOnceIdle(gwDb);
      return { rate: drainRate([...side.ends].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))), perJob: (after - before) / N };
    };
    const drains: Record<`${"fg" | "gw"}${1 | 2}` | "fgFirst", Drain[]> = { fg1: [], gw1: [], fg2: [], gw2: [], fgFirst: [] };
    for (let round = 1; round <= s.drainRounds; round++) {
      for (const k of [1, 2] as const) {
        const fg = async () => drains[`fg${k}`].push(await flowgateDrain(k));
        const gwr = async () => drains[`gw${k}`].push(await graphileDrain(k));
        for (const run of round % 2 === 1 ? [fg, gwr] : [gwr, fg]) await run();
      }
      drains.fgFirst.push(await flowgateDrain(1, true));
      const last = (key: keyof typeof drains) => drains[key].at(-1)!;
      ctx.log(
        `postgres: drain round ${round}: ${N} jobs; flowgate ${Math.round(last("fg1").rate)}/s (${last("fg1").perJob.toFixed(2)} transactions/job) with one worker, ${Math.round(last("fg2").rate)}/s (${last("fg2").perJob.toFixed(2)}) with two, ${Math.round(last("fgFirst").rate)}/s with one worker up before the jobs; graphile-worker ${Math.round(last("gw1").rate)}/s (${last("gw1").perJob.toFixed(2)}), ${Math.round(last("gw2").rate)}/s (${last("gw2").perJob.toFixed(2)})`,
      );
    }
    const rates = (key: keyof typeof drains) => drains[key].map((d) => d.rate);
    const perJob = (key: keyof typeof drains) => drains[key].map((d) => d.perJob);

    const p = (rounds: number[][], q: number) => rounds.map((r) => percentile(r, q));
    const all = (rounds: number[][]) => rounds.flat();
    const label = "PostgreSQL: dispatch across processes, trivial jobs, beside graphile-worker";
    const samples = all(fgLat).length;
    const figures: Figure[] = [
      {
        scenario: label,
        metric: "submit → running p50",
        value: median(p(fgLat, 50)),
        unit: "ms",
        baseline: { name: "graphile-worker addJob → task start p50", value: median(p(gwLat, 50)), unit: "ms" },
        ratio: medianRatio(p(fgLat, 50), p(gwLat, 50)),
        target: { on: "ratio", op: "<=", bound: 3 },
        rounds: p(fgLat, 50),
        note: `flowgate: POST /api/v2/jobs to an API node until its hosted socket's first word of the job, \`execution_start\` (or \`execution_success\` when the node read the job after the run ended): the insert's commit, the wake NOTIFY, the worker's claim (one statement) and its NOTIFY with the job's row, the node's fan-out; one worker process each of concurrency ${DISPATCH_CONCURRENCY}; one job at a time, ${s.dispatchJobs} a round`,
      },
      {
        scenario: label,
        metric: "submit → running p99",
        value: percentile(all(fgLat), 99),
        unit: "ms",
        baseline: { name: "graphile-worker addJob → task start p99", value: percentile(all(gwLat), 99), unit: "ms" },
        ratio: percentile(all(fgLat), 99) / percentile(all(gwLat), 99),
        target: { on: "value", op: "<=", bound: 50 },
        rounds: p(fgLat, 99),
        note: `p99 of all ${samples.toLocaleString("en-US")} jobs of every round (the rounds column: each round's own p99)`,
      },
    ];
    for (const k of [1, 2] as const) {
      const who = k === 1 ? "one worker" : "two workers";
      figures.push(
        {
          scenario: label,
          metric: `jobs completed per second, ${who}`,
          value: median(rates(`fg${k}`)),
          unit: "jobs/s",
          baseline: { name: `graphile-worker, ${k === 1 ? "one runner" : "two runners"}`, value: median(rates(`gw${k}`)), unit: "jobs/s" },
          ratio: medianRatio(rates(`fg${k}`), rates(`gw${k}`)),
          // Issue #48's goal, for one worker: half graphile-worker's drain on the same server.
          ...(k === 1 ? { target: { on: "ratio" as const, op: ">=" as const, bound: 0.5 } } : {}),
          rounds: rates(`fg${k}`),
          note: `${N.toLocaleString("en-US")} jobs queued, then the workers (and, for flowgate, an API node) started together; timed from the ${Math.round(DRAIN_SKIP * 100)} % mark to the last end (flowgate: the jobs' completed_at, written by the workers; graphile-worker: the runners' job:success)`,
        },
        {
          scenario: label,
          metric: `database transactions per job, ${who}`,
          value: median(perJob(`fg${k}`)),
          unit: "transactions",
          baseline: { name: `graphile-worker, ${k === 1 ? "one runner" : "two runners"}`, value: median(perJob(`gw${k}`)), unit: "transactions" },
          ratio: medianRatio(perJob(`fg${k}`), perJob(`gw${k}`)),
          target: { on: "value", op: "<=", bound: 4 },
          rounds: perJob(`fg${k}`),
          note: "pg_stat_database.xact_commit of a database of the drain's own, from the queue written until every process exited (their start and stop included; the bench's polls counted out), over the jobs drained",
        },
      );
    }
    figures.push({
      scenario: label,
      metric: "jobs completed per second, one worker up before the jobs",
      value: median(rates("fgFirst")),
      unit: "jobs/s",
      baseline: { name: "flowgate, the jobs queued before the worker started (the same rounds)", value: median(rates("fg1")), unit: "jobs/s" },
      ratio: medianRatio(rates("fgFirst"), rates("fg1")),
      target: { on: "ratio", op: ">=", bound: 0.8 },
      rounds: rates("fgFirst"),
      note: `in a new database each round: the API node and one worker started on an empty table, ${WORKERS_FIRST_WARM_JOBS} jobs run (the worker's statements planned for a table of a few rows), then ${N.toLocaleString("en-US")} jobs written while it runs; timed as above`,
    });
    if (jobs.repeated > 0 || jobs.startSkipped > 0) {
      ctx.warn(
        `postgres dispatch: the API node's socket sent ${jobs.startSkipped} jobs' execution_success without their execution_start, and ${jobs.repeated} repeated execution_start or execution_success messages`,
      );
    }
    return figures;
  } finally {
    socket?.close();
    await Promise.all([api?.stop().catch(() => undefined), ...workers.map((w) => w.stop().catch(() => undefined)), gw.stop().catch(() => undefined)]);
    await Promise.resolve(utils.release()).catch(() => undefined);
    for (const d of databases)
      await dropBenchDatabase(d).catch((err: unknown) => ctx.warn(`postgres: could not drop database ${d}: ${(err as Error).message}`));
  }
}
