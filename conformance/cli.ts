// `npm run conformance -- --base-url URL ...` (and `flowgate conformance ...`, which calls main).
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { formatConsole, formatProgress, toJson, toJUnit } from "./machinery/report.ts";
import { toHtml } from "./machinery/html-report.ts";
import { runConformance } from "./runner.ts";
import { SURFACES, type ConformanceOptions, type Surface } from "./types.ts";
import { loadGraph } from "./checks/support/workflows.ts";

/** Usage text of --help. */
export const USAGE = `Usage: npm run conformance -- --base-url URL [options]
       flowgate conformance --base-url URL [options]

Checks that a deployment keeps the flowgate v2 contract (and the hosted interface where served).
Exits 0 when every applicable check passes, 1 when any fails, 2 on a usage or connection error.

  --base-url URL          base URL of the surface; may carry a mount prefix (http://host/deployment/ID);
                          /api/v2/... is appended to it (required)
  --token T               bearer token for v2 and X-API-Key / WebSocket token for the hosted interface
  --surface S             self-hosted (default), cloud or serverless: which surface's expectations apply
  --only LIST             comma-separated rule groups or rule IDs to run (e.g. SUB,IDEM,SSE-2)
  --unsupported LIST      what the surface declares it does not support: labels, logs, hosted, jobs, or rule
                          groups and rule IDs; those rules are reported as "not supported (declared)"
  --static                only the static subset: shape checks that need no execution (runs against a mock)
  --report-json FILE      write the report as JSON
  --junit FILE            write the report as JUnit XML
  --report-html FILE      write the report as one self-contained HTML page (every rule, failures with their exchange)
  --slow-workflow FILE    graph of a slow job (several seconds, one output); default: FlowgateDelay
                          (a ComfyUI without it: conformance/workflows/comfyui-slow.json, core nodes)
  --steps-workflow FILE   graph with a stepped node (progress, previews); default: FlowgateSampler
  --failing-workflow FILE graph that validates and fails while running; default: ImageBlend of batches 2 and 3
                          (graph files: API format, or {workflow} / {prompt}; "$NONCE" is a random integer per run, below 2^24)
  --slow-seconds N        seconds the default slow graph waits (default 3)
  --other-token T         a second caller, for the "another caller's job" checks
  --forbidden-token T     a caller who is authenticated but not allowed (403)
  --no-credits-token T    an account without credits (402; cloud and serverless)
  --demo                  the target is the public demo deployment (anonymous callers, logs withheld)
  --not-ready-url URL     base URL of a provisioning deployment (429 deployment_not_ready)
  --stopped-url URL       base URL of a stopped deployment (422 deployment_stopped)
  --fill-queue N          submit up to N long jobs (canceled after) to reach the queue bound (429 queue_full); default 0: off
  --oversize-mb N         size of the oversized bodies of the negative checks (default 32; 0: off)
  --timeout-ms N          per-request timeout (default 15000)
  --check-timeout-ms N    per-check timeout (default 120000)
  --job-timeout-ms N      how long to wait for a job to reach a state (default 60000)
  --reread-after-seconds N
                          re-read every job at the end at least N s after the first end the run saw
                          (default 3: a finished job must not change later; only a shorter run waits)
  --explore N             random sequences of submit, get, cancel and list checked against a model (default 3; 0: off)
  --seed S                seed of those sequences (default random; a failure prints the seed that replays it)
  --run-label V           value of the conformance-run label every v2 job of the run carries, where the surface
                          takes labels (default: the start time and a random suffix)
  --quiet                 no line per check while running
  --help                  this text
`;

const OPTIONS = {
  "base-url": { type: "string" },
  token: { type: "string" },
  surface: { type: "string" },
  only: { type: "string" },
  static: { type: "boolean" },
  unsupported: { type: "string" },
  "report-json": { type: "string" },
  junit: { type: "string" },
  "report-html": { type: "string" },
  "slow-workflow": { type: "string" },
  "steps-workflow": { type: "string" },
  "failing-workflow": { type: "string" },
  "slow-seconds": { type: "string" },
  "reread-after-seconds": { type: "string" },
  "other-token": { type: "string" },
  "forbidden-token": { type: "string" },
  "no-credits-token": { type: "string" },
  demo: { type: "boolean" },
  "not-ready-url": { type: "string" },
  "stopped-url": { type: "string" },
  "fill-queue": { type: "string" },
  "oversize-mb": { type: "string" },
  "timeout-ms": { type: "string" },
  "check-timeout-ms": { type: "string" },
  "job-timeout-ms": { type: "string" },
  "run-label": { type: "string" },
  explore: { type: "string" },
  seed: { type: "string" },
  quiet: { type: "boolean" },
  help: { type: "boolean" },
} as const;

/** A usage error: reported with the usage text, exit code 2. */
export class UsageError extends Error {}

function num(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`--${flag} needs a non-negative number, got ${JSON.stringify(v)}`);
  return n;
}

/** Parses command-line arguments into run options and output files; throws UsageError. */
export function parseCli(argv: string[]): {
  options: ConformanceOptions;
  reportJson?: string;
  junit?: string;
  reportHtml?: string;
  quiet: boolean;
  help: boolean;
} {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const s = (k: string) => values[k] as string | undefined;
  if (values.help) return { options: { baseUrl: "" }, quiet: true, help: true };
  const baseUrl = s("base-url");
  if (!baseUrl) throw new UsageError("--base-url is required");
  try {
    new URL(baseUrl);
  } catch {
    throw new UsageError(`--base-url ${baseUrl} is not a URL`);
  }
  const surface = (s("surface") ?? "self-hosted") as Surface;
  if (!SURFACES.includes(surface)) throw new UsageError(`--surface must be one of ${SURFACES.join(", ")}`);
  if ((s("run-label")?.length ?? 0) > 256) throw new UsageError("--run-label takes at most 256 characters (a label value's bound)");
  const graph = (k: string) => (s(k) ? loadGraph(s(k)!) : undefined);
  const options: ConformanceOptions = {
    baseUrl,
    token: s("token"),
    surface,
    only: s("only")
      ?.split(",")
      .map((x) => x.trim())
      .filter(Boolean),
    static: !!values.static,
    unsupported: s("unsupported")
      ?.split(",")
      .map((x) => x.trim())
      .filter(Boolean),
    slowWorkflow: graph("slow-workflow"),
    stepsWorkflow: graph("steps-workflow"),
    failingWorkflow: graph("failing-workflow"),
    slowSeconds: num(s("slow-seconds"), "slow-seconds"),
    otherToken: s("other-token"),
    forbiddenToken: s("forbidden-token"),
    noCreditsToken: s("no-credits-token"),
    demo: !!values.demo,
    notReadyUrl: s("not-ready-url"),
    stoppedUrl: s("stopped-url"),
    fillQueue: num(s("fill-queue"), "fill-queue"),
    oversizeMb: num(s("oversize-mb"), "oversize-mb"),
    requestTimeoutMs: num(s("timeout-ms"), "timeout-ms"),
    checkTimeoutMs: num(s("check-timeout-ms"), "check-timeout-ms"),
    jobTimeoutMs: num(s("job-timeout-ms"), "job-timeout-ms"),
    rereadAfterSeconds: num(s("reread-after-seconds"), "reread-after-seconds"),
    runLabel: s("run-label"),
    explore: num(s("explore"), "explore"),
    seed: s("seed") === undefined ? undefined : Number.parseInt(s("seed")!, 10) | 0,
  };
  return { options, reportJson: s("report-json"), junit: s("junit"), reportHtml: s("report-html"), quiet: !!values.quiet, help: false };
}

/** Runs the CLI; resolves to the process exit code. */
export async function main(
  argv: string[],
  out: (s: string) => void = (s) => process.stdout.write(s),
  err: (s: string) => void = (s) => process.stderr.write(s),
): Promise<number> {
  let parsed: ReturnType<typeof parseCli>;
  try {
    parsed = parseCli(argv);
  } catch (e) {
    err(`${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.help) {
    out(USAGE);
    return 0;
  }
  const said = new Map<string, string>();
  const onResult = parsed.quiet ? undefined : (r: Parameters<NonNullable<ConformanceOptions["onResult"]>>[0]) => out(`${formatProgress(r, said)}\n`);
  let report;
  try {
    report = await runConformance({ ...parsed.options, onResult });
  } catch (e) {
    err(`conformance: ${(e as Error).message}\n`);
    return 2;
  }
  out(`\n${formatConsole(report)}\n`);
  if (parsed.reportJson) writeFileSync(parsed.reportJson, toJson(report));
  if (parsed.junit) writeFileSync(parsed.junit, toJUnit(report));
  if (parsed.reportHtml) writeFileSync(parsed.reportHtml, toHtml(report));
  return report.ok ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
