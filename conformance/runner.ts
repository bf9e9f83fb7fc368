// Runs the checks against one surface and builds the report: every check in order (the ones
// that look back over the run last), each with its timeout and cleanup, then one result per rule
// for what the HTTP layer found in every answer, event and message.
import { Failed, Skip, T, type Capabilities, type Check, type ResolvedOptions, type RunContext } from "./check.ts";
import { Http, RequestTimeout } from "./machinery/http.ts";
import { declaredUnsupported, profileOf } from "./profile.ts";
import { Recorder } from "./machinery/recorder.ts";
import { redactReport } from "./machinery/html-report.ts";
import type { CoverageIndex, Coverage } from "./machinery/coverage.ts";
import { ownerRule } from "./machinery/contract.ts";
import { notHosted } from "./checks/support/hosted-client.ts";
import { RUN_LABEL } from "./checks/support/jobs.ts";
import { GROUPS, groupOf } from "./rules.ts";
import type { CheckResult, ConformanceOptions, Report } from "./types.ts";
import gen from "./checks/contract/gen.ts";
import job from "./checks/jobs/job.ts";
import log from "./checks/jobs/log.ts";
import logBound from "./checks/jobs/log-bound.ts";
import prg from "./checks/jobs/prg.ts";
import out from "./checks/outputs/out.ts";
import jerr from "./checks/jobs/jerr.ts";
import url from "./checks/outputs/url.ts";
import st from "./checks/jobs/st.ts";
import sub from "./checks/jobs/sub.ts";
import idem from "./checks/requests/idem.ts";
import get from "./checks/jobs/get.ts";
import can from "./checks/jobs/can.ts";
import sse from "./checks/events/sse.ts";
import ast from "./checks/outputs/ast.ts";
import auth from "./checks/requests/auth.ts";
import err from "./checks/requests/err.ts";
import host from "./checks/hosted/host.ts";
import hostRoutes from "./checks/hosted/host-routes.ts";
import ws from "./checks/hosted/ws.ts";
import ver from "./checks/contract/ver.ts";
import lbl from "./checks/jobs/lbl.ts";
import explore from "./checks/jobs/explore.ts";
import sdk from "./checks/jobs/sdk.ts";
import hjob from "./checks/hosted/hjob.ts";
import lnk from "./checks/outputs/lnk.ts";

/** Every check of the suite, in rule-group order. */
export const ALL_CHECKS: readonly Check[] = [
  gen,
  job,
  log,
  logBound,
  prg,
  out,
  jerr,
  url,
  st,
  sub,
  idem,
  get,
  can,
  sse,
  ast,
  auth,
  err,
  host,
  hostRoutes,
  ws,
  ver,
  lbl,
  explore,
  sdk,
  hjob,
  lnk,
].flat();

/** Options with their defaults. */
export function resolveOptions(o: ConformanceOptions): ResolvedOptions {
  return {
    ...o,
    surface: o.surface ?? "self-hosted",
    explore: o.explore ?? 3,
    slowSeconds: o.slowSeconds ?? 3,
    fillQueue: o.fillQueue ?? 0,
    oversizeMb: o.oversizeMb ?? 32,
    requestTimeoutMs: o.requestTimeoutMs ?? 15_000,
    checkTimeoutMs: o.checkTimeoutMs ?? 120_000,
    jobTimeoutMs: o.jobTimeoutMs ?? 60_000,
    rereadAfterSeconds: o.rereadAfterSeconds ?? 3,
  };
}

/** Whether a check is selected by --only (groups or rule IDs) and --static. */
export function selected(c: Check, o: Pick<ConformanceOptions, "only" | "static">): boolean {
  if (o.static && !c.static) return false;
  if (!o.only?.length) return true;
  return o.only.some((x) => x === c.rule || x === groupOf(c.rule));
}

/** What the surface offers, learned from its public interface before the checks. */
async function probe(http: Http): Promise<Capabilities> {
  const labels = await takesLabels(http);
  const ex = await http.request("GET", http.url("/api/object_info"));
  if (ex.status !== 200 || !ex.json || typeof ex.json !== "object" || Array.isArray(ex.json)) {
    return {
      hosted: false,
      labels,
      hostedProbe:
        ex.status === 200
          ? `GET /api/object_info answered 200 without an object of node definitions (${ex.text.slice(0, 60)})`
          : `GET /api/object_info answered ${ex.status}`,
    };
  }
  return { hosted: true, labels, classes: new Set(Object.keys(ex.json)) };
}

/** Whether the surface takes job labels: a listing filtered by the run label answers 200 (no job is created to find out). */
async function takesLabels(http: Http): Promise<boolean> {
  const q = new URLSearchParams({ [`metadata[${RUN_LABEL}]`]: "probe", limit: "1" });
  const ex = await http.request("GET", http.url(`/api/v2/jobs?${q}`)).catch(() => undefined);
  return ex?.status === 200;
}

/** A run label: the start time and a random suffix, e.g. `2026-11-28T11-50-02Z-3f9a`. */
function newRunLabel(): string {
  return `${new Date()
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replaceAll(":", "-")}-${crypto.randomUUID().slice(0, 4)}`;
}

/**
 * Cancels every job the run saw that its last view left in flight (a check that timed out before
 * its cleanup, a prompt of the hosted interface): v2 cancel, else POST /api/queue {delete}.
 * Resolves to how many it asked to cancel.
 */
async function cancelLeftovers(run: RunContext): Promise<number> {
  const { http } = run;
  const left = http.timeline.rereads().filter((r) => !r.terminal);
  for (const r of left) {
    const auth = r.auth ?? "auto";
    const id = encodeURIComponent(r.id);
    const note = "end-of-run cancel";
    if (r.v2) await http.request("POST", http.url(`/api/v2/jobs/${id}/cancel`), { auth, raw: true, note }).catch(() => undefined);
    else if (run.caps.hosted) await http.request("POST", http.url("/api/queue"), { json: { delete: [r.id] }, auth, raw: true, note }).catch(() => undefined);
  }
  return left.length;
}

function within<V>(p: Promise<V>, ms: number): Promise<V> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<V>((_, reject) => (timer = setTimeout(() => reject(new Error(`the check did not finish within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** Runs one check with its timeout and cleanups. */
export async function runCheck(run: RunContext, c: Check): Promise<CheckResult> {
  const started = Date.now();
  const base = { rule: c.rule, group: groupOf(c.rule), title: c.title, kind: "check" as const, static: c.static };
  const declared = declaredUnsupported(run.options.unsupported);
  if (declared.has(c.rule) || declared.has(groupOf(c.rule)))
    return { ...base, status: "unsupported", reason: "not supported (declared)", durationMs: 0, failures: [] };
  const notApplicable = c.when?.(run);
  if (notApplicable) return { ...base, status: "skipped", reason: notApplicable, durationMs: 0, failures: [] };
  const t = new T(run, c);
  let reason: string | undefined;
  try {
    await within(c.run(t), c.timeoutMs ?? run.options.checkTimeoutMs);
  } catch (e) {
    if (e instanceof Skip) reason = e.message;
    else if (!(e instanceof Failed)) t.softFail(e instanceof RequestTimeout ? `${e.message} (a hang)` : (e as Error).message);
  }
  for (const fn of t.cleanups.reverse()) await within(fn(), run.options.requestTimeoutMs * 2).catch(() => undefined);
  const status = t.failures.length ? "failed" : reason !== undefined ? "skipped" : "passed";
  return { ...base, status, reason: status === "skipped" ? reason : undefined, durationMs: Date.now() - started, failures: t.failures };
}

/** One result per rule the HTTP layer evaluated, in the selected groups. */
function autoResults(recorder: Recorder, o: ResolvedOptions): CheckResult[] {
  const out: CheckResult[] = [];
  const declared = declaredUnsupported(o.unsupported);
  for (const [rule, tally] of [...recorder.tallies].sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))) {
    if (o.only?.length && !o.only.some((x) => x === rule || x === groupOf(rule))) continue;
    const failures = tally.failures.map((f, i) => ({ ...f, message: tally.counts[i]! > 1 ? `${f.message} (seen ${tally.counts[i]} times)` : f.message }));
    out.push({
      rule,
      group: groupOf(rule),
      title: `${rule} every answer, event and message seen conforms (${tally.evaluated} evaluations)`,
      ...(declared.has(rule) || declared.has(groupOf(rule))
        ? { status: "unsupported" as const, reason: "not supported (declared)", failures: [] }
        : { status: failures.length ? ("failed" as const) : ("passed" as const), failures }),
      durationMs: 0,
      kind: "auto",
      static: false,
    });
  }
  return out;
}

/** The coverage index of a run, each thing not reached with the reason the run knows. */
export function coverageOf(coverage: Coverage, run: RunContext, results: readonly CheckResult[]): CoverageIndex {
  const skippedReason = (rule: string) => {
    const r = results.find((x) => x.rule === rule && x.status === "skipped") ?? results.find((x) => x.group === rule && x.status === "skipped");
    return r ? `skipped: ${r.rule} ${r.reason ?? ""}`.trim() : undefined;
  };
  const declared = declaredUnsupported(run.options.unsupported);
  return coverage.index(({ operation, transport }) => {
    const hostedPart = operation ? operation.family === "hosted" : transport === "ws";
    const group = operation ? groupOf(ownerRule(operation.operationId)) : transport === "sse" ? "SSE" : "WS";
    if (declared.has(group)) return "not supported (declared)";
    if (hostedPart && !run.caps.hosted) return `not served: ${notHosted(run.caps.hostedProbe)}`;
    if (operation) return skippedReason(ownerRule(operation.operationId));
    return skippedReason(transport === "sse" ? "SSE" : "WS");
  });
}

/** Builds the report from the results. */
export function buildReport(o: ResolvedOptions, hosted: boolean, startedAt: number, results: CheckResult[], coverage?: CoverageIndex): Report {
  const order = Object.keys(GROUPS);
  results.sort((a, b) => order.indexOf(a.group) - order.indexOf(b.group));
  const groups = order
    .map((g) => {
      const rs = results.filter((r) => r.group === g);
      const count = (s: CheckResult["status"]) => rs.filter((r) => r.status === s).length;
      return { group: g, title: GROUPS[g]!, passed: count("passed"), failed: count("failed"), skipped: count("skipped"), unsupported: count("unsupported") };
    })
    .filter((g) => g.passed + g.failed + g.skipped + g.unsupported > 0);
  const totals = { passed: 0, failed: 0, skipped: 0, unsupported: 0 };
  for (const g of groups) {
    totals.passed += g.passed;
    totals.failed += g.failed;
    totals.skipped += g.skipped;
    totals.unsupported += g.unsupported;
  }
  const failedRules = [...new Set(results.flatMap((r) => (r.status === "failed" ? r.failures.map((f) => f.rule) : [])))].sort();
  return {
    baseUrl: o.baseUrl,
    surface: o.surface,
    static: !!o.static,
    startedAt: new Date(startedAt).toISOString(),
    durationMs: Date.now() - startedAt,
    hosted,
    unsupported: o.unsupported ?? [],
    runLabel: null,
    canceledAtEnd: 0,
    results,
    groups,
    totals,
    failedRules,
    coverage,
    ok: totals.failed === 0,
  };
}

/**
 * Reads every job of the run once more at the end, through v2 and, for finished jobs, the hosted
 * status: the timeline then holds a late view of each (a finished job must not have changed) and
 * both interfaces' views of the same job. The re-read comes at least --reread-after-seconds after
 * the first end the run saw, so that a job read a few seconds after its end is among them; only a
 * run shorter than that waits.
 */
async function rereadJobs(run: RunContext): Promise<void> {
  const { http, caps } = run;
  const queue = http.timeline.rereads();
  const firstEnd = Math.min(...queue.flatMap((r) => (r.endedAt === undefined ? [] : [r.endedAt])));
  const wait = firstEnd + run.options.rereadAfterSeconds * 1000 - http.timeline.now();
  if (Number.isFinite(wait) && wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  const one = async (r: (typeof queue)[number]) => {
    const auth = r.auth ?? "auto";
    const id = encodeURIComponent(r.id);
    await http.request("GET", http.url(`/api/v2/jobs/${id}`), { auth, note: "end-of-run re-read" }).catch(() => undefined);
    const apiKey = typeof auth === "object" ? ("bearer" in auth ? auth.bearer : auth.apiKey) : undefined;
    if (caps.hosted && r.terminal && r.v2)
      await http.request("GET", http.url(`/api/job/${id}/status`), { auth: apiKey ? { apiKey } : auth, note: "end-of-run re-read" }).catch(() => undefined);
  };
  const workers = Array.from({ length: 4 }, async () => {
    for (let r = queue.shift(); r; r = queue.shift()) await one(r);
  });
  await Promise.all(workers);
}

/** Runs the conformance suite against a surface and returns the report; it never throws for a failing check. */
export async function runConformance(options: ConformanceOptions): Promise<Report> {
  const o = resolveOptions(options);
  const startedAt = Date.now();
  const recorder = new Recorder();
  const keys = [o.token, o.otherToken, o.noCreditsToken, o.forbiddenToken].filter((k): k is string => !!k);
  const http = new Http({
    baseUrl: o.baseUrl,
    token: o.token,
    timeoutMs: o.requestTimeoutMs,
    surface: o.surface,
    demo: !!o.demo,
    recorder,
    keys,
    timeline: !o.static,
  });
  const caps = await probe(http);
  const run: RunContext = { http, options: o, profile: profileOf(o.surface), caps, runLabel: o.runLabel ?? newRunLabel() };
  const checks = ALL_CHECKS.filter((c) => selected(c, o));
  const results: CheckResult[] = [];
  for (const c of [...checks.filter((c) => !c.final), ...checks.filter((c) => c.final)]) {
    const r = await runCheck(run, c);
    http.timeline.verify();
    results.push(r);
    o.onResult?.(r);
  }
  let canceledAtEnd = 0;
  if (http.recording) {
    await rereadJobs(run);
    http.timeline.verify();
    canceledAtEnd = await cancelLeftovers(run);
  }
  results.push(...autoResults(recorder, o));
  const report = {
    ...buildReport(o, caps.hosted, startedAt, results, coverageOf(http.coverage, run, results)),
    runLabel: caps.labels ? run.runLabel : null,
    canceledAtEnd,
  };
  // Whatever format is written from it, a report never carries the run's keys or extra_data values.
  return redactReport(report, [...keys, ...http.secrets]);
}
