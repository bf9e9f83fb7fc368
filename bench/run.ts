// The performance harness: `npm run bench [-- --quick] [-- --only http,sse] [-- --out file] [-- --profile]`.
// Servers run in child processes (bench/server-child.ts); the load generator (autocannon) and the
// SSE clients run here. Every figure is stated against a baseline measured in the same run, as
// the median of several rounds. Prints a markdown table and writes bench/results.json.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { childNodeFlags, ROOT } from "./lib/child.ts";
import { FULL, QUICK, type BenchContext } from "./lib/context.ts";
import { machineInfo, markdownTable, type Figure } from "./lib/report.ts";
import { blobScenarios } from "./scenarios/blobs.ts";
import { comfyuiScenarios } from "./scenarios/comfyui.ts";
import { engineScenarios } from "./scenarios/engine.ts";
import { hashScenarios } from "./scenarios/hash.ts";
import { labelScenarios } from "./scenarios/labels.ts";
import { heavyScenarios } from "./scenarios/heavy.ts";
import { httpScenarios } from "./scenarios/http.ts";
import { memoryScenarios } from "./scenarios/memory.ts";
import { postgresScenarios } from "./scenarios/postgres.ts";
import { sseScenarios } from "./scenarios/sse.ts";

const SCENARIOS: Record<string, (ctx: BenchContext) => Promise<Figure[]>> = {
  engine: engineScenarios,
  hash: hashScenarios,
  labels: labelScenarios,
  http: httpScenarios,
  sse: sseScenarios,
  memory: memoryScenarios,
  comfyui: comfyuiScenarios,
  heavy: heavyScenarios,
  postgres: postgresScenarios,
  blobs: blobScenarios,
};

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      quick: { type: "boolean", default: false },
      only: { type: "string" },
      out: { type: "string" },
      profile: { type: "boolean", default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const quick = values.quick === true;
  const only = values.only ? values.only.split(",").map((x) => x.trim()) : Object.keys(SCENARIOS);
  for (const name of only) if (!SCENARIOS[name]) throw new Error(`unknown scenario "${name}" (known: ${Object.keys(SCENARIOS).join(", ")})`);
  const out = resolve(values.out ?? join(ROOT, quick ? "bench/results.quick.json" : "bench/results.json"));
  if (values.profile) {
    const dir = join(ROOT, "bench/profiles");
    await mkdir(dir, { recursive: true });
    childNodeFlags.push("--cpu-prof", `--cpu-prof-dir=${dir}`);
  }

  const tmpRoot = await mkdtemp(join(tmpdir(), "flowgate-bench-"));
  const started = Date.now();
  const warnings: string[] = [];
  const ctx: BenchContext = {
    quick,
    sizes: quick ? QUICK : FULL,
    tmpRoot,
    log: (m) => console.error(`[bench ${((Date.now() - started) / 1000).toFixed(1)}s] ${m}`),
    warn: (m) => {
      warnings.push(m);
      console.error(`[bench] warning: ${m}`);
    },
  };
  const machine = machineInfo(tmpRoot);
  const figures: Figure[] = [];
  const failed: string[] = [];
  try {
    for (const name of only) {
      ctx.log(`scenario ${name}`);
      try {
        figures.push(...(await SCENARIOS[name]!(ctx)));
      } catch (err) {
        failed.push(name);
        ctx.warn(`scenario ${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      }
    }
  } finally {
    await rm(tmpRoot, { recursive: true, force: true });
  }

  const table = markdownTable(figures);
  const met = figures.filter((f) => f.met === true).length;
  const missed = figures.filter((f) => f.met === false).length;
  console.log(`\n## flowgate bench (${quick ? "quick" : "full"}), ${new Date(started).toISOString()}\n`);
  const load = (xs: unknown) => (xs as number[]).join(" / ");
  console.log(
    `${machine.cpu as string}, ${machine.cpus as number} CPUs, Node ${process.version}, data dir on ${machine.dataDirFilesystem as string}; load average ${load(machine.loadavgAtStart)} at start, ${load(os.loadavg().map((x) => Math.round(x * 100) / 100))} at end\n`,
  );
  console.log(table);
  console.log(`\ntargets: ${met} met, ${missed} missed${failed.length ? `; scenarios failed: ${failed.join(", ")}` : ""}`);
  for (const w of warnings) console.log(`- warning: ${w.split("\n")[0]}`);
  machine.loadavgAtEnd = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const result = {
    date: new Date(started).toISOString(),
    mode: quick ? "quick" : "full",
    durationS: Math.round((Date.now() - started) / 100) / 10,
    machine,
    sizes: ctx.sizes,
    scenarios: only,
    failed,
    warnings,
    figures,
  };
  await mkdir(resolve(out, ".."), { recursive: true });
  await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\nwrote ${out}`);
  return failed.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(2);
  },
);
