// Memory under a steady load: one SQLite flowgate server in its own process (bench/server-child.ts,
// as the bench starts it), a steady mix of v2 and hosted traffic from this process over loopback,
// and the server's RSS and V8 heap after a full GC sampled at a fixed interval.
//
//   npx tsx bench/soak.ts --minutes 15 [--interval 30] [--loops 4] [--snapshots DIR] [--out FILE]
//
// Bounded in time (--minutes) and in load (--loops request loops, each one request at a time,
// with a pause between rounds). With --snapshots, heap snapshots are written early and at the
// end, to compare in Chrome DevTools (Memory → Comparison). Prints one JSON line per sample and a
// summary: the growth over the first and the second half of the run.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { spawnServer, type ServerChild } from "./lib/child.ts";
import { fourOutputGraph, threeNodeGraph } from "./lib/graphs.ts";
import type { ChildCounts, MemorySample } from "./lib/protocol.ts";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "15" },
    interval: { type: "string", default: "30" },
    loops: { type: "string", default: "4" },
    pause: { type: "string", default: "20" },
    snapshots: { type: "string" },
    out: { type: "string" },
  },
});
const minutes = Number(values.minutes);
const intervalMs = Number(values.interval) * 1000;
const loops = Number(values.loops);
const pauseMs = Number(values.pause);
if (!(minutes > 0 && minutes <= 24 * 60 && intervalMs >= 1000 && loops >= 1 && loops <= 64)) {
  throw new Error("soak: --minutes 0..1440, --interval >= 1 (s), --loops 1..64");
}

const MB = 1_000_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Sample extends MemorySample {
  t: number;
  /** Resident anonymous memory and file pages (mapped code, the SQLite file), from /proc; null elsewhere. */
  rssAnon: number | null;
  rssFile: number | null;
  requests: number;
  errors: number;
  counts: ChildCounts;
}

let requests = 0;
let errors = 0;

async function call(url: string, init?: RequestInit): Promise<Response> {
  requests++;
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(60_000) });
  if (res.status >= 400) errors++;
  return res;
}

async function json(url: string, init?: RequestInit): Promise<any> {
  const res = await call(url, init);
  return res.json();
}

/** Reads a v2 event stream to its end (the stream ends once the job is terminal). */
async function follow(base: string, id: string): Promise<void> {
  const res = await call(`${base}/api/v2/jobs/${id}/events`, { headers: { accept: "text/event-stream" } });
  await res.arrayBuffer();
}

/** One round of v2 traffic: submit, follow the stream, read the job and one output, upload and delete an asset. */
async function v2Round(base: string, png: Buffer): Promise<void> {
  const job = await json(`${base}/api/v2/jobs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ workflow: fourOutputGraph() }),
  });
  await follow(base, job.id);
  const done = await json(`${base}/api/v2/jobs/${job.id}`);
  const out = done.outputs?.[0];
  if (out?.url) await (await call(out.url.startsWith("http") ? out.url : `${base}${out.url}`)).arrayBuffer();
  await (await call(`${base}/api/v2/jobs?limit=20`)).arrayBuffer();
  const text = await json(`${base}/api/v2/jobs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ workflow: threeNodeGraph() }),
  });
  await follow(base, text.id);
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(png), String(Math.random())], { type: "image/png" }), "soak.png");
  const asset = await json(`${base}/api/v2/assets`, { method: "POST", body: form });
  if (asset.id) await (await call(`${base}/api/v2/assets/${asset.id}`, { method: "DELETE" })).arrayBuffer();
}

/** One round of hosted traffic: upload, prompt, history until done, view an output, queue. */
async function hostedRound(base: string, png: Buffer): Promise<void> {
  const form = new FormData();
  form.append("image", new Blob([new Uint8Array(png)], { type: "image/png" }), "soak.png");
  const up = await json(`${base}/api/upload/image`, { method: "POST", body: form });
  const graph = {
    "1": { class_type: "LoadImage", inputs: { image: up.name } },
    "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
    "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: `soak${Math.floor(Math.random() * 1e6)}` } },
  };
  const { prompt_id } = await json(`${base}/api/prompt`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt: graph, client_id: "soak" }),
  });
  for (let i = 0; i < 600; i++) {
    const history = await json(`${base}/api/history/${prompt_id}`);
    const entry = history[prompt_id];
    if (entry?.status?.completed || entry?.status?.status_str === "error") {
      const image = entry.outputs?.["3"]?.images?.[0];
      if (image)
        await (
          await call(`${base}/api/view?filename=${encodeURIComponent(image.filename)}&subfolder=${encodeURIComponent(image.subfolder)}&type=${image.type}`)
        ).arrayBuffer();
      break;
    }
    await sleep(25);
  }
  await (await call(`${base}/api/queue`)).arrayBuffer();
  await (await call(`${base}/api/history?max_items=20`)).arrayBuffer();
}

async function sample(server: ServerChild, t0: number): Promise<Sample> {
  const m = await server.memory(true);
  const status = await readFile(`/proc/${server.pid}/status`, "utf8").catch(() => "");
  const kb = (name: string) => {
    const hit = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status);
    return hit ? Number(hit[1]) * 1024 : null;
  };
  return { t: Math.round((Date.now() - t0) / 1000), ...m, rssAnon: kb("RssAnon"), rssFile: kb("RssFile"), requests, errors, counts: await server.counts() };
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), "flowgate-soak-"));
  const server = await spawnServer({ kind: "flowgate", name: "flowgate-soak", dataDir, config: { reaperIntervalMs: 60_000 } });
  const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 200, g: 40, b: 90 } } })
    .png()
    .toBuffer();
  const t0 = Date.now();
  const end = t0 + minutes * 60_000;
  const samples: Sample[] = [];
  let running = true;
  const loop = async (i: number) => {
    while (running && Date.now() < end) {
      try {
        await (i % 2 === 0 ? v2Round(server.url, png) : hostedRound(server.url, png));
      } catch (err) {
        errors++;
        process.stderr.write(`soak: ${(err as Error).message}\n`);
      }
      await sleep(pauseMs);
    }
  };
  const snapshot = async (label: string) => {
    if (!values.snapshots) return;
    const path = resolve(values.snapshots, `soak-${label}.heapsnapshot`);
    await server.call({ op: "heap-snapshot", path });
    process.stderr.write(`soak: heap snapshot ${path}\n`);
  };
  try {
    samples.push(await sample(server, t0));
    console.log(JSON.stringify(samples[0]));
    const workers = Array.from({ length: loops }, (_, i) => loop(i));
    let snapped = false;
    while (Date.now() < end) {
      await sleep(Math.min(intervalMs, Math.max(0, end - Date.now())));
      const s = await sample(server, t0);
      samples.push(s);
      console.log(JSON.stringify(s));
      if (!snapped && s.t >= 120) {
        snapped = true;
        await snapshot("early");
      }
    }
    running = false;
    await Promise.all(workers);
    await sleep(1000);
    samples.push(await sample(server, t0));
    await snapshot("end");
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  const first = samples[1] ?? samples[0]!;
  const mid = samples[Math.floor(samples.length / 2)]!;
  const last = samples.at(-1)!;
  const summary = {
    minutes,
    loops,
    requests: last.requests,
    errors: last.errors,
    jobs: last.counts.completed,
    rssMB: [first.rss / MB, mid.rss / MB, last.rss / MB].map((v) => Number(v.toFixed(1))),
    heapMB: [first.heapUsed / MB, mid.heapUsed / MB, last.heapUsed / MB].map((v) => Number(v.toFixed(1))),
    externalMB: [first.external / MB, mid.external / MB, last.external / MB].map((v) => Number(v.toFixed(1))),
    rssAnonMB: [first.rssAnon, mid.rssAnon, last.rssAnon].map((v) => (v === null ? null : Number((v / MB).toFixed(1)))),
  };
  console.log(JSON.stringify({ summary }));
  if (values.out) await writeFile(values.out, JSON.stringify({ summary, samples }, null, 2));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
