// HTTP scenarios, measured in interleaved rounds against servers that are all up at once:
// - a bare node:http server answering the bytes of GET /api/v2/jobs/{id} (the baseline);
// - flowgate with an empty queue (GET of a finished 4-output job, GET of a queued job, submit);
// - flowgate with `queueDepth` jobs queued (GET of a queued job in the middle, submit).
// Each server holds one slot (concurrency 1) with a long job, so submissions stay queued and the
// engine never competes with the HTTP path. Before each round the jobs the previous round queued
// on the empty-queue server are canceled, so that queue stays empty. A figure and its baseline
// run back to back, in swapped order every other round; ratios are medians of per-round ratios.
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { spawnServer, type ServerChild } from "../lib/child.ts";
import type { BenchContext } from "../lib/context.ts";
import { blockingGraph, fourOutputGraph, threeNodeGraph } from "../lib/graphs.ts";
import { pairedRounds, request, submit, submitLoad, waitJob, type LoadSpec } from "../lib/http.ts";
import { judge, type Figure } from "../lib/report.ts";
import { seedSqliteQueue } from "../lib/seed.ts";
import { median, medianRatio, sleep } from "../lib/stats.ts";

/** Far above anything the bench queues: the bound must never answer 429 here. */
const QUEUE_LIMIT = 100_000_000;

type Measure = "bare" | "getFinished" | "getQueuedEmpty" | "getQueuedDeep" | "submitEmpty" | "submitDeep";
/** Each figure and its baseline run back to back, the pair's order swapped every other round. */
const PAIRS: Array<[Measure, Measure]> = [
  ["bare", "getFinished"],
  ["getQueuedEmpty", "getQueuedDeep"],
  ["submitEmpty", "submitDeep"],
];

export async function httpScenarios(ctx: BenchContext): Promise<Figure[]> {
  const s = ctx.sizes;
  const children: ServerChild[] = [];
  try {
    // --- flowgate, empty queue -------------------------------------------------------------
    ctx.log("http: starting flowgate (empty queue)");
    const empty = await spawnServer({
      kind: "flowgate",
      name: "flowgate-empty",
      dataDir: await mkdtemp(join(ctx.tmpRoot, "empty-")),
      config: { concurrency: 1, queueLimit: QUEUE_LIMIT },
    });
    children.push(empty);
    const fin = await submit(empty.url, fourOutputGraph());
    const finished = await waitJob(empty.url, fin.id, (j) => j.status === "succeeded" || j.status === "failed", "the end");
    if (finished.status !== "succeeded" || finished.outputs.length !== 4)
      throw new Error(`the 4-output job ended ${finished.status} with ${finished.outputs.length} outputs`);
    const block = await submit(empty.url, blockingGraph(3600));
    await waitJob(empty.url, block.id, (j) => j.status === "running", "running");
    const probeEmpty = await submit(empty.url, threeNodeGraph());
    const finPath = `/api/v2/jobs/${fin.id}`;
    const sample = await request(empty.url, "GET", finPath);
    if (sample.status !== 200) throw new Error(`GET ${finPath} answered ${sample.status}`);

    // --- the bare baseline with the same bytes ---------------------------------------------
    ctx.log(`http: starting the bare node:http baseline (${sample.text.length} bytes per answer)`);
    const bare = await spawnServer({ kind: "bare", name: "bare", bodyBase64: Buffer.from(sample.text).toString("base64"), contentType: sample.contentType });
    children.push(bare);

    // --- flowgate, deep queue ---------------------------------------------------------------
    const deepDir = await mkdtemp(join(ctx.tmpRoot, "deep-"));
    ctx.log(`http: seeding ${s.queueDepth.toLocaleString("en-US")} queued jobs`);
    const t0 = Date.now();
    const { blockerId, probeId, probeIndex } = await seedSqliteQueue(deepDir, s.queueDepth);
    ctx.log(`http: seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s; starting flowgate (deep queue)`);
    const deep = await spawnServer({ kind: "flowgate", name: "flowgate-deep", dataDir: deepDir, config: { concurrency: 1, queueLimit: QUEUE_LIMIT } });
    children.push(deep);
    // The start at boot is durable a moment after the server answers, and a moment after a read
    // shows the blocker running: until then the blocker keeps its place at the head of the queue.
    await waitJob(deep.url, blockerId, (j) => j.status === "running", "running");
    await waitJob(deep.url, probeId, (j) => j.status === "queued" && j.queue_position === probeIndex, `the probe queued at ${probeIndex}`);
    const deepCounts = await deep.counts();
    if (deepCounts.queued < s.queueDepth) throw new Error(`deep queue holds ${deepCounts.queued} jobs, expected ${s.queueDepth}`);

    // --- the measurements -------------------------------------------------------------------
    const C = s.connections;
    const post = (url: string) => submitLoad(url, C);
    const specs: Record<Measure, Omit<LoadSpec, "durationS">> = {
      bare: { url: bare.url, path: finPath, connections: C },
      getFinished: { url: empty.url, path: finPath, connections: C },
      getQueuedEmpty: { url: empty.url, path: `/api/v2/jobs/${probeEmpty.id}`, connections: C },
      submitEmpty: post(empty.url),
      getQueuedDeep: { url: deep.url, path: `/api/v2/jobs/${probeId}`, connections: C },
      submitDeep: post(deep.url),
    };
    // Keep the empty queue empty: cancel what the previous submit run queued (the probe stays, at 0).
    const emptyTheQueue = async () => {
      await empty.call({ op: "cancel-queued", keep: [probeEmpty.id] });
      await sleep(100);
    };
    const results = await pairedRounds(ctx, "http", PAIRS, (m) => specs[m], emptyTheQueue);
    const deepFinal = await deep.counts();

    // --- figures ----------------------------------------------------------------------------
    const rate = (m: Measure) => results[m].map((r) => r.rate);
    const lat = (m: Measure, k: "p50" | "p99") => results[m].map((r) => r[k]);
    const bareRate = median(rate("bare"));
    const figures: Figure[] = [
      {
        scenario: "GET /api/v2/jobs/{id}, finished job, 4 outputs",
        metric: "requests/s",
        value: median(rate("getFinished")),
        unit: "req/s",
        baseline: { name: "bare node:http, same bytes", value: bareRate, unit: "req/s" },
        ratio: medianRatio(rate("getFinished"), rate("bare")),
        target: { on: "ratio", op: ">=", bound: 0.6 },
        rounds: rate("getFinished"),
        note: `${sample.text.length}-byte answer, ${C} connections, ${s.httpDurationS} s per round`,
      },
      {
        scenario: "POST /api/v2/jobs, 3-node graph, durable commit, Idempotency-Key",
        metric: "jobs/s",
        value: median(rate("submitEmpty")),
        unit: "jobs/s",
        baseline: { name: "bare node:http GET", value: bareRate, unit: "req/s" },
        ratio: medianRatio(rate("submitEmpty"), rate("bare")),
        target: { on: "ratio", op: ">=", bound: 0.3 },
        rounds: rate("submitEmpty"),
        note: `every 201 after an fsync of the WAL holding the job (group commit), ${C} connections`,
      },
      {
        scenario: "POST /api/v2/jobs, 3-node graph, durable commit, Idempotency-Key",
        metric: "latency p50",
        value: median(lat("submitEmpty", "p50")),
        unit: "ms",
        baseline: { name: "bare GET p50", value: median(lat("bare", "p50")), unit: "ms" },
        rounds: lat("submitEmpty", "p50"),
        note: "autocannon latency, 1 ms resolution",
      },
      {
        scenario: "POST /api/v2/jobs, 3-node graph, durable commit, Idempotency-Key",
        metric: "latency p99",
        value: median(lat("submitEmpty", "p99")),
        unit: "ms",
        baseline: { name: "bare GET p99", value: median(lat("bare", "p99")), unit: "ms" },
        rounds: lat("submitEmpty", "p99"),
      },
      {
        scenario: `Queue depth ${s.queueDepth.toLocaleString("en-US")}: GET of a queued job (queue_position ${probeIndex.toLocaleString("en-US")})`,
        metric: "requests/s",
        value: median(rate("getQueuedDeep")),
        unit: "req/s",
        baseline: { name: "same GET, empty queue", value: median(rate("getQueuedEmpty")), unit: "req/s" },
        ratio: medianRatio(rate("getQueuedDeep"), rate("getQueuedEmpty")),
        target: { on: "ratio", op: ">=", bound: 0.8 },
        rounds: rate("getQueuedDeep"),
      },
      {
        scenario: `Queue depth ${s.queueDepth.toLocaleString("en-US")}: submit`,
        metric: "jobs/s",
        value: median(rate("submitDeep")),
        unit: "jobs/s",
        baseline: { name: "submit, empty queue", value: median(rate("submitEmpty")), unit: "jobs/s" },
        ratio: medianRatio(rate("submitDeep"), rate("submitEmpty")),
        target: { on: "ratio", op: ">=", bound: 0.8 },
        rounds: rate("submitDeep"),
        note: `deep queue ended at ${deepFinal.queued.toLocaleString("en-US")} jobs`,
      },
    ];
    return figures.map(judge);
  } finally {
    await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
  }
}
