// Server memory over completed jobs: `memoryJobs` jobs (the 3-node graph with a unique value,
// so each one really runs and commits its text output) to completion, the server's memory after
// GC, then as many again: the growth of the second phase over the first.
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { spawnServer, type ServerChild } from "../lib/child.ts";
import type { BenchContext } from "../lib/context.ts";
import { threeNodeGraph } from "../lib/graphs.ts";
import type { MemorySample } from "../lib/protocol.ts";
import { judge, type Figure } from "../lib/report.ts";
import { sleep } from "../lib/stats.ts";

const SUBMITTERS = 8;
/** Jobs submitted but not finished, at most: the queue stays short, the server stays busy. */
const BACKLOG = 256;

/** Submits `count` jobs and waits until all of them completed; bounded by a deadline. */
async function runJobs(server: ServerChild, count: number): Promise<{ seconds: number; unsuccessful: number }> {
  const start = await server.counts();
  const t0 = Date.now();
  const deadline = t0 + 60_000 + count * 100;
  let completed = start.completed;
  let submitted = 0;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      completed = (await server.counts()).completed;
      await sleep(25);
    }
  })();
  const submitter = async () => {
    while (submitted < count) {
      while (submitted - (completed - start.completed) >= BACKLOG) {
        if (Date.now() > deadline) throw new Error("memory: jobs did not complete in time");
        await sleep(5);
      }
      submitted++;
      const res = await fetch(`${server.url}/api/v2/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ workflow: threeNodeGraph() }),
      });
      await res.arrayBuffer();
      if (res.status !== 201) throw new Error(`memory: submit answered ${res.status}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: SUBMITTERS }, submitter));
    while (completed - start.completed < count) {
      if (Date.now() > deadline) throw new Error(`memory: ${completed - start.completed} of ${count} jobs completed in time`);
      await sleep(25);
    }
  } finally {
    polling = false;
    await poller;
  }
  const end = await server.counts();
  return { seconds: (Date.now() - t0) / 1000, unsuccessful: end.unsuccessful - start.unsuccessful };
}

const MB = 1_000_000;

function cacheText(c: { entries: number; bytes: number } | null | undefined): string {
  return c ? `${c.entries.toLocaleString("en-US")} entries / ${(c.bytes / MB).toFixed(1)} MB (estimated)` : "n/a";
}

export async function memoryScenarios(ctx: BenchContext): Promise<Figure[]> {
  const n = ctx.sizes.memoryJobs;
  const server = await spawnServer({
    kind: "flowgate",
    name: "flowgate-memory",
    dataDir: await mkdtemp(join(ctx.tmpRoot, "memory-")),
    config: { queueLimit: 100_000_000 },
  });
  const samples: MemorySample[] = [];
  const caches: Array<{ entries: number; bytes: number } | null> = [];
  try {
    samples.push(await server.memory(true));
    for (const phase of [1, 2]) {
      const r = await runJobs(server, n);
      if (r.unsuccessful > 0) ctx.warn(`memory: ${r.unsuccessful} jobs of phase ${phase} did not succeed`);
      await sleep(500); // trailing progress writes and stream cleanup
      samples.push(await server.memory(true));
      caches.push((await server.counts()).engineCache);
      ctx.log(
        `memory: phase ${phase}: ${n} jobs in ${r.seconds.toFixed(1)} s (${(n / r.seconds).toFixed(0)} jobs/s); RSS ${(samples.at(-1)!.rss / MB).toFixed(1)} MB, heap ${(samples.at(-1)!.heapUsed / MB).toFixed(1)} MB`,
      );
    }
  } finally {
    await server.stop();
  }
  const [m0, m1, m2] = samples as [MemorySample, MemorySample, MemorySample];
  const label = `Memory over completed jobs (${n.toLocaleString("en-US")} then ${n.toLocaleString("en-US")} more)`;
  const figures: Figure[] = [
    {
      scenario: label,
      metric: "RSS growth, 2nd batch over 1st",
      value: ((m2.rss - m1.rss) / m1.rss) * 100,
      unit: "%",
      baseline: { name: `RSS after the 1st batch (at start ${(m0.rss / MB).toFixed(0)} MB)`, value: m1.rss / MB, unit: "MB" },
      ratio: m2.rss / m1.rss,
      target: { on: "value", op: "<=", bound: 10 },
      note: `RSS after the 2nd batch ${(m2.rss / MB).toFixed(1)} MB`,
    },
    {
      scenario: label,
      metric: "JS heap growth, 2nd batch over 1st",
      value: ((m2.heapUsed - m1.heapUsed) / m1.heapUsed) * 100,
      unit: "%",
      baseline: { name: `heap after the 1st batch (at start ${(m0.heapUsed / MB).toFixed(0)} MB)`, value: m1.heapUsed / MB, unit: "MB" },
      ratio: m2.heapUsed / m1.heapUsed,
      target: { on: "value", op: "<=", bound: 10 },
      note: `heap after the 2nd batch ${(m2.heapUsed / MB).toFixed(1)} MB; external ${(m1.external / MB).toFixed(1)} → ${(m2.external / MB).toFixed(1)} MB; engine result cache ${cacheText(caches[0])} → ${cacheText(caches[1])}`,
    },
  ];
  return figures.map(judge);
}
