// /healthz latency while the largest job the memory budget allows runs: EmptyImage of the biggest
// square whose floats and its 8-bit PNG frame fit --job-memory (1 GB by default), saved as PNG.
// One probe client sends GET /healthz back to back (a 5 ms pause between answers), first with
// no job (the baseline), then while the job runs; the p99 of each, per round.
import { mkdtemp } from "node:fs/promises";
import http from "node:http";
import { join } from "node:path";
import { spawnServer, type ServerChild } from "../lib/child.ts";
import type { BenchContext } from "../lib/context.ts";
import { judge, type Figure } from "../lib/report.ts";
import { median, medianRatio, percentile, sleep } from "../lib/stats.ts";

const JOB_MEMORY = 2 ** 30;
/** Bytes per pixel the job holds at its peak: 3 floats of the image plus 3 bytes of the PNG frame. */
const PEAK_BYTES_PER_PIXEL = 15;
const BASELINE_MS = 2_000;

/** The largest multiple of 64 whose square image fits the budget at its peak. */
function largestSide(budget: number): number {
  return Math.floor(Math.sqrt(budget / PEAK_BYTES_PER_PIXEL) / 64) * 64;
}

/** GET /healthz latencies (ms) until `stop` resolves; one request at a time on a kept-alive socket. */
async function probe(url: string, stop: Promise<unknown>): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const samples: number[] = [];
  let done = false;
  void stop.finally(() => (done = true));
  try {
    while (!done) {
      const t0 = performance.now();
      await new Promise<void>((resolve, reject) => {
        http
          .get(`${url}/healthz`, { agent }, (res) => {
            res.resume();
            res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`/healthz answered ${res.statusCode}`))));
          })
          .on("error", reject);
      });
      samples.push(performance.now() - t0);
      await sleep(5);
    }
  } finally {
    agent.destroy();
  }
  return samples;
}

async function submit(server: ServerChild, side: number): Promise<string> {
  const workflow = {
    "1": { class_type: "EmptyImage", inputs: { width: side, height: side, batch_size: 1, color: 0x336699 } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "heavy" } },
  };
  const res = await fetch(`${server.url}/api/v2/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ workflow }) });
  const body = (await res.json()) as { id?: string };
  if (res.status !== 201 || !body.id) throw new Error(`heavy: submit answered ${res.status} ${JSON.stringify(body)}`);
  return body.id;
}

/** Polls the job (through the probe's own server, so also under load) until it ends. */
async function finished(server: ServerChild, id: string, deadline: number): Promise<string> {
  for (;;) {
    const job = (await (await fetch(`${server.url}/api/v2/jobs/${id}`)).json()) as { status: string; error?: { code?: string } | null };
    if (["succeeded", "failed", "canceled", "expired"].includes(job.status))
      return job.status === "succeeded" ? job.status : `${job.status} ${job.error?.code ?? ""}`;
    if (Date.now() > deadline) throw new Error("heavy: the job did not finish in time");
    await sleep(50);
  }
}

export async function heavyScenarios(ctx: BenchContext): Promise<Figure[]> {
  const side = ctx.quick ? 1024 : largestSide(JOB_MEMORY);
  const rounds = ctx.quick ? 1 : 3;
  const server = await spawnServer({
    kind: "flowgate",
    name: "flowgate-heavy",
    dataDir: await mkdtemp(join(ctx.tmpRoot, "heavy-")),
    config: { jobMemoryBytes: JOB_MEMORY, cacheBytes: 0 },
  });
  const baseline: number[] = [];
  const loaded: number[] = [];
  const maxima: number[] = [];
  const jobSeconds: number[] = [];
  let samples = 0;
  try {
    for (let r = 0; r < rounds; r++) {
      const idle = await probe(server.url, sleep(BASELINE_MS));
      baseline.push(percentile(idle, 99));
      const t0 = Date.now();
      const id = await submit(server, side);
      const end = finished(server, id, Date.now() + 300_000);
      const busy = await probe(server.url, end);
      const status = await end;
      if (status !== "succeeded") ctx.warn(`heavy: the ${side}x${side} job ended ${status}`);
      jobSeconds.push((Date.now() - t0) / 1000);
      loaded.push(percentile(busy, 99));
      maxima.push(Math.max(...busy));
      samples += busy.length;
      ctx.log(
        `heavy: round ${r + 1}: ${side}x${side} job ${jobSeconds.at(-1)!.toFixed(1)} s, /healthz p99 ${loaded.at(-1)!.toFixed(1)} ms (max ${maxima.at(-1)!.toFixed(1)}, ${busy.length} probes) vs ${baseline.at(-1)!.toFixed(1)} ms idle`,
      );
    }
  } finally {
    await server.stop();
  }
  return [
    judge({
      scenario: `/healthz while the largest job --job-memory 1GB allows runs (EmptyImage ${side}x${side} → SaveImage)`,
      metric: "latency p99",
      value: median(loaded),
      unit: "ms",
      baseline: { name: "the same probe, no job", value: median(baseline), unit: "ms" },
      ratio: medianRatio(loaded, baseline),
      target: { on: "value", op: "<=", bound: 50 },
      rounds: loaded,
      note: `max ${median(maxima).toFixed(1)} ms (median of rounds); job ${median(jobSeconds).toFixed(1)} s; ${samples} probes over ${rounds} round(s)`,
    }),
  ];
}
