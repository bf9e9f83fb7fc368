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
//
// Fan-out across processes: an API node (`--no-dispatch`, a server child) holds `pgStreams` SSE
// streams on a job that a real `flowgate worker` process runs; a second API node cancels it. The
// time runs from the client sending that cancel to each stream reading the `canceling` frame: the
// second node's handling (its read of the job, the UPDATE and COMMIT), the commit's notification
// (LISTEN/NOTIFY), the first node's read of the job, its fan-out. The client's clock is the origin
// because it always precedes the commit: the committing node's own clock (its event bus publishing
// the change, sent over IPC; CLOCK_MONOTONIC is shared by the processes of one host) marks when
// that node heard its COMMIT return, which on a busy host came after the other node's streams had
// the frame (a negative latency in one round). That figure is reported alongside.
// Baseline, in the same rounds: the same fan-out in one process on SQLite (cancel and streams on
// the process that runs the job), timed the same way.
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { startWorker, type WorkerProcess } from "../lib/cli-worker.ts";
import { spawnServer, type ServerChild } from "../lib/child.ts";
import type { BenchContext } from "../lib/context.ts";
import { blockingGraph, fourOutputGraph, threeNodeBodyTemplate, threeNodeGraph } from "../lib/graphs.ts";
import { pairedRounds, request, submit, waitJob, type LoadSpec } from "../lib/http.ts";
import { createBenchSchema, dropBenchSchema, postgresUnavailable, schemaUrl } from "../lib/postgres.ts";
import { judge, type Figure } from "../lib/report.ts";
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
    const figures = [...(await throughput(ctx, await schema())), ...(await fanOut(ctx, await schema()))];
    return figures.map(judge);
  } finally {
    for (const s of schemas) await dropBenchSchema(s).catch((err: unknown) => ctx.warn(`postgres: could not drop schema ${s}: ${(err as Error).message}`));
  }
}

// --- throughput ------------------------------------------------------------------------------

type Store = "sqlite" | "pg";
type Measure = `${"getFinished" | "getQueued" | "submit"}-${Store}`;
/** Each PostgreSQL figure and its SQLite baseline run back to back, the pair's order swapped every other round. */
const PAIRS: Array<[Measure, Measure]> = [
  ["getFinished-sqlite", "getFinished-pg"],
  ["getQueued-sqlite", "getQueued-pg"],
  ["submit-sqlite", "submit-pg"],
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
  if (finished.status !== "succeeded" || finished.outputs.length !== 4) throw new Error(`${server.name}: the 4-output job ended ${finished.status} with ${finished.outputs.length} outputs`);
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

async function throughput(ctx: BenchContext, schema: string): Promise<Figure[]> {
  const s = ctx.sizes;
  const children: ServerChild[] = [];
  try {
    ctx.log("postgres: starting flowgate on SQLite and on PostgreSQL");
    const common = { concurrency: 1, queueLimit: QUEUE_LIMIT };
    const sqliteServer = await spawnServer({ kind: "flowgate", name: "flowgate-sqlite", dataDir: await mkdtemp(join(ctx.tmpRoot, "pg-sqlite-")), config: common });
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
    const spec = (m: Measure): Omit<LoadSpec, "durationS"> => {
      const p = servers[m.endsWith("-pg") ? "pg" : "sqlite"];
      if (m.startsWith("getFinished")) return { url: p.server.url, path: p.finishedPath, connections: C };
      if (m.startsWith("getQueued")) return { url: p.server.url, path: `/api/v2/jobs/${p.probeId}`, connections: C };
      return {
        url: p.server.url,
        path: "/api/v2/jobs",
        method: "POST",
        body: threeNodeBodyTemplate(),
        headers: { "idempotency-key": "bench-[<id>]" },
        idReplacement: true,
        connections: C,
      };
    };
    // Both queues start each round empty but for the probe: what the last round queued is canceled.
    const emptyTheQueues = async () => {
      const t0 = Date.now();
      const n = await Promise.all((["sqlite", "pg"] as const).map((k) => servers[k].server.call<number>({ op: "cancel-queued", keep: [servers[k].probeId] })));
      if (n[0]! + n[1]! > 0) ctx.log(`postgres: canceled ${n[0]} queued jobs on SQLite and ${n[1]} on PostgreSQL in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      await sleep(100);
    };

    const results = await pairedRounds(ctx, "postgres", PAIRS, spec, emptyTheQueues);

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
    if (res.status !== 200 || res.body.status !== "canceling") throw new Error(`cancel through ${canceler.name} answered ${res.status}: ${res.text.slice(0, 300)}`);
    const { published } = await watch.at;
    const times = await arrivals;
    const lat = times.map((t) => ms(t - requested));
    if (!(await pool.ended())) warn(`postgres ${streams.name}: not every stream ended after the terminal frame`);
    if (pool.error) warn(`postgres ${streams.name}: ${pool.error.message}`);
    return { p50: percentile(lat, 50), p99: percentile(lat, 99), last: Math.max(...lat), p99FromPublish: percentile(times.map((t) => ms(t - published)), 99) };
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
    worker = await startWorker(["--database-url", url, "--data-dir", await mkdtemp(join(ctx.tmpRoot, "pg-worker-")), "--blob-dir", blobDir, "--concurrency", "4", "--queue-limit", String(QUEUE_LIMIT)]);
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
        note: `from the client sending the cancel to a second API node to each stream reading \`canceling\` (that node's UPDATE, LISTEN/NOTIFY, a read, the fan-out); p50 ${median(col(cross, "p50")).toFixed(1)} ms; from the canceling node publishing the change p99 ${median(col(cross, "p99FromPublish")).toFixed(1)} ms (one process ${median(col(base, "p99FromPublish")).toFixed(1)} ms)`,
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
