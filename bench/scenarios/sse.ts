// SSE fan-out: `sseStreams` open streams on one running job; the job is canceled and the time
// from the server publishing `canceling` (hrtime sent over IPC; CLOCK_MONOTONIC is shared by
// processes on one host) to each stream receiving that status frame is recorded. Memory: the
// server's (after GC) with the streams open minus before they were opened, per stream.
// Baseline, in the same rounds: a bare node:http server holding as many event streams, writing
// the same frames (`canceling`, then `canceled` and the end) in a loop. Every round starts fresh
// server processes, so RSS growth is not hidden by memory an earlier round freed.
import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { spawnServer, type ServerChild } from "../lib/child.ts";
import type { BenchContext } from "../lib/context.ts";
import { blockingGraph } from "../lib/graphs.ts";
import { request, submit, waitJob } from "../lib/http.ts";
import type { BroadcastTimes } from "../lib/protocol.ts";
import { judge, type Figure } from "../lib/report.ts";
import { SsePool } from "../lib/sse-pool.ts";
import { median, medianRatio, percentile, sleep } from "../lib/stats.ts";

/** The soft limit on open files of this process (the client side of every stream). */
function openFileLimit(): number {
  try {
    return Number(execFileSync("/bin/sh", ["-c", "ulimit -n"], { encoding: "utf8" }).trim()) || 1024;
  } catch {
    return 1024;
  }
}

const ms = (ns: bigint) => Number(ns) / 1e6;
const MARKER = '"status":"canceling"';

interface RoundResult {
  p50: number;
  p99: number;
  last: number;
  /** Transition to the server's event loop being idle again (both fan-outs written). */
  busy: number;
  rssPerStream: number;
  heapPerStream: number;
  openPerS: number;
}

/** Opens `n` streams on `path`, measures memory, triggers the transition and times its arrival. */
async function measure(
  server: ServerChild,
  path: string,
  n: number,
  trigger: () => Promise<{ published: bigint; idle: bigint }>,
  warn: (m: string) => void,
): Promise<RoundResult> {
  const url = new URL(server.url);
  // Warm the path (JIT, first allocations) with a few streams before the memory baseline.
  const warm = new SsePool(url.hostname, Number(url.port));
  await warm.open(Math.min(50, n), path);
  await warm.close();
  for (let i = 0; i < 100 && ((await server.counts()).streams ?? 0) > 0; i++) await sleep(20);
  const before = await server.memory(true);
  const pool = new SsePool(url.hostname, Number(url.port));
  try {
    const t0 = Date.now();
    await pool.open(n, path);
    const openS = (Date.now() - t0) / 1000;
    const counts = await server.counts();
    if (counts.streams !== null && counts.streams !== n) warn(`sse ${server.name}: the server counts ${counts.streams} open streams, expected ${n}`);
    const after = await server.memory(true);
    const arrivals = pool.arm(MARKER);
    const { published, idle } = await trigger();
    const times = await arrivals;
    const lat = times.map((t) => ms(t - published));
    if (!(await pool.ended())) warn(`sse ${server.name}: not every stream ended after the terminal frame`);
    if (pool.error) warn(`sse ${server.name}: ${pool.error.message}`);
    return {
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      last: Math.max(...lat),
      busy: ms(idle - published),
      rssPerStream: (after.rss - before.rss) / n / 1000,
      heapPerStream: (after.heapUsed + after.external - before.heapUsed - before.external) / n / 1000,
      openPerS: n / openS,
    };
  } finally {
    await pool.close();
  }
}

const frame = (job: unknown) => `event: status\ndata: ${JSON.stringify(job)}\n\n`;

export async function sseScenarios(ctx: BenchContext): Promise<Figure[]> {
  let n = ctx.sizes.sseStreams;
  const limit = openFileLimit();
  if (limit < n + 512) {
    const reduced = Math.max(100, limit - 512);
    ctx.warn(`open-file limit ${limit} (ulimit -n) is too low for ${n} client sockets; measuring ${reduced} streams instead`);
    n = reduced;
  }
  const fg: RoundResult[] = [];
  const bare: RoundResult[] = [];
  for (let round = 1; round <= ctx.sizes.sseRounds; round++) {
    const flowgate = await spawnServer({
      kind: "flowgate",
      name: "flowgate-sse",
      dataDir: await mkdtemp(join(ctx.tmpRoot, "sse-")),
      config: { maxStreamsPerCaller: 10_000_000, concurrency: 4, queueLimit: 100_000_000 },
    });
    try {
      const job = await submit(flowgate.url, blockingGraph(600));
      const running = await waitJob(flowgate.url, job.id, (j) => j.status === "running", "running");
      const now = new Date().toISOString();
      const frames = [frame({ ...running, status: "canceling" }), frame({ ...running, status: "canceled", completed_at: now })];

      // The baseline first: a bare server with the same frames.
      const bareServer = await spawnServer({ kind: "bare-sse", name: "bare-sse", firstFrame: frame(running) });
      try {
        bare.push(
          await measure(
            bareServer,
            "/",
            n,
            async () => {
              const t = await bareServer.call<BroadcastTimes>({ op: "broadcast", frames, end: true });
              return { published: BigInt(t.publishedNs), idle: BigInt(t.idleNs) };
            },
            (m) => ctx.warn(m),
          ),
        );
      } finally {
        await bareServer.stop();
      }

      fg.push(
        await measure(
          flowgate,
          `/api/v2/jobs/${job.id}/events`,
          n,
          async () => {
            const watch = await flowgate.watchTransition(job.id, "canceling");
            const res = await request(flowgate.url, "POST", `/api/v2/jobs/${job.id}/cancel`);
            if (res.status !== 200) throw new Error(`cancel answered ${res.status}: ${res.text.slice(0, 300)}`);
            return watch.at;
          },
          (m) => ctx.warn(m),
        ),
      );
    } finally {
      await flowgate.stop();
    }
    const f = fg.at(-1)!;
    const b = bare.at(-1)!;
    ctx.log(
      `sse: round ${round}: ${n} streams; transition -> stream p99 ${f.p99.toFixed(1)} ms (bare ${b.p99.toFixed(1)}), last ${f.last.toFixed(1)} ms (bare ${b.last.toFixed(1)}); ${f.rssPerStream.toFixed(1)} KB RSS/stream (bare ${b.rssPerStream.toFixed(1)})`,
    );
  }
  const col = (rs: RoundResult[], k: keyof RoundResult) => rs.map((r) => r[k]);
  const label = `SSE fan-out, ${n.toLocaleString("en-US")} streams on one job`;
  const figures: Figure[] = [
    {
      scenario: label,
      metric: "transition → stream p99",
      value: median(col(fg, "p99")),
      unit: "ms",
      baseline: { name: "bare node:http SSE, same frames", value: median(col(bare, "p99")), unit: "ms" },
      ratio: medianRatio(col(fg, "p99"), col(bare, "p99")),
      target: { on: "value", op: "<=", bound: 250 },
      rounds: col(fg, "p99"),
      note: `from the server publishing \`canceling\` to each client socket reading that frame; p50 ${median(col(fg, "p50")).toFixed(1)} ms`,
    },
    {
      scenario: label,
      metric: "transition → last stream",
      value: median(col(fg, "last")),
      unit: "ms",
      baseline: { name: "bare node:http SSE, same frames", value: median(col(bare, "last")), unit: "ms" },
      ratio: medianRatio(col(fg, "last"), col(bare, "last")),
      rounds: col(fg, "last"),
      note: `server event loop busy after the transition: ${median(col(fg, "busy")).toFixed(1)} ms (bare ${median(col(bare, "busy")).toFixed(1)} ms)`,
    },
    {
      scenario: label,
      metric: "server memory per open stream (RSS)",
      value: median(col(fg, "rssPerStream")),
      unit: "KB",
      baseline: { name: "bare node:http SSE", value: median(col(bare, "rssPerStream")), unit: "KB" },
      ratio: medianRatio(col(fg, "rssPerStream"), col(bare, "rssPerStream")),
      target: { on: "value", op: "<=", bound: 20 },
      rounds: col(fg, "rssPerStream"),
      note: `after GC, streams open minus before; JS heap + external ${median(col(fg, "heapPerStream")).toFixed(1)} KB/stream (bare ${median(col(bare, "heapPerStream")).toFixed(1)}); streams opened at ${Math.round(median(col(fg, "openPerS")))}/s`,
    },
  ];
  return figures.map(judge);
}
