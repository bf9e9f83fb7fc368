// Runs the suite in-process against a test double, with timings that suit a test run.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { runConformance, type ConformanceOptions, type Report } from "../../conformance/index.ts";
import { Coverage } from "../../conformance/machinery/coverage.ts";
import type { Directory } from "../../src/store/index.ts";
import { generateApiKey, hashApiKey, keyPrefix } from "../../src/surfaces/api-keys.ts";
import { startDouble, type DoubleOptions } from "./double/server.ts";

/**
 * Fast settings: short slow jobs, small oversized bodies, short waits, an early final re-read; no
 * random sequences (a breakage test expects its rule alone; the sequences find some of them too).
 */
export const FAST: Partial<ConformanceOptions> = {
  explore: 0,
  slowSeconds: 0.5,
  oversizeMb: 2,
  jobTimeoutMs: 20_000,
  requestTimeoutMs: 10_000,
  rereadAfterSeconds: 1,
};

/** Starts a double, runs the suite against it, stops the double. `ORIGIN` in string options is the double's origin. */
export async function runAgainstDouble(double: DoubleOptions, run: Partial<ConformanceOptions> = {}): Promise<Report> {
  const d = await startDouble(double);
  try {
    const opts = JSON.parse(JSON.stringify(run).replaceAll("ORIGIN", d.origin)) as Partial<ConformanceOptions>;
    return await runConformance({ baseUrl: d.baseUrl, ...FAST, ...opts });
  } finally {
    await d.close();
  }
}

/**
 * Failures of a report, one line each, for assertion messages, each followed by the exchange that
 * shows it (the request and an excerpt of the answer, indented) where the failure has one: a
 * failure seen once under load must be diagnosable from the test's output alone.
 */
export function failureLines(r: Report): string {
  return r.results
    .filter((x) => x.status === "failed")
    .flatMap((x) =>
      x.failures.map((f) =>
        [
          `[${f.rule}] ${x.title}: ${f.message}`,
          ...(f.request ? [`    request: ${f.request}`] : []),
          ...(f.excerpt ? [`    answer: ${f.excerpt.replaceAll("\n", "\n      ")}`] : []),
        ].join("\n"),
      ),
    )
    .join("\n");
}

/** Double and suite options of each surface, with every optional input the suite can use. */
export const SURFACE_SETUPS: Record<string, { double: DoubleOptions; run: Partial<ConformanceOptions> }> = {
  "self-hosted, anonymous": { double: {}, run: {} },
  "self-hosted, static token": { double: { tokens: ["static-token"] }, run: { token: "static-token" } },
  cloud: {
    double: { surface: "cloud", tokens: ["tok-a", "tok-b"], noCredits: ["tok-poor"], forbidden: ["tok-no"], slots: 2, queueBound: 4 },
    run: { surface: "cloud", token: "tok-a", otherToken: "tok-b", noCreditsToken: "tok-poor", forbiddenToken: "tok-no", fillQueue: 12 },
  },
  "serverless behind the gateway mount": {
    double: {
      surface: "serverless",
      prefix: "/deployment/abc",
      tokens: ["tok-a", "tok-b"],
      noCredits: ["tok-poor"],
      forbidden: ["tok-no"],
      deploymentStates: { "/deployment/starting": "not_ready", "/deployment/stopped": "stopped" },
      queueBound: 4,
    },
    run: {
      surface: "serverless",
      token: "tok-a",
      otherToken: "tok-b",
      noCreditsToken: "tok-poor",
      forbiddenToken: "tok-no",
      fillQueue: 12,
      notReadyUrl: "ORIGIN/deployment/starting",
      stoppedUrl: "ORIGIN/deployment/stopped",
    },
  },
  "serverless demo deployment": { double: { surface: "serverless", prefix: "/deployment/demo", demo: true }, run: { surface: "serverless", demo: true } },
};

/** Creates an account with one API key in a directory (SQLite or PostgreSQL); returns the key. */
export async function accountKey(dir: Directory, name: string, patch: { credits?: number; subscription_active?: boolean } = {}): Promise<string> {
  await dir.ensureAccount(name, { tier: "pro", credits: patch.credits ?? 1000, now: Date.now() });
  await dir.updateAccount(name, patch);
  const key = generateApiKey();
  await dir.addApiKey({ key_hash: hashApiKey(key), account: name, prefix: keyPrefix(key), created_at: Date.now(), revoked_at: null });
  return key;
}

/**
 * What a run reached below what the server implements: every operation and message not reached
 * for a reason other than `not served` or `not on this surface`, except the messages the server is
 * known never to send (`allowMessages`, by id). Empty when the run reached everything it could.
 */
export function coverageGaps(r: Report, allowMessages: readonly string[] = []): string[] {
  const c = r.coverage;
  if (!c) return ["the report has no coverage index"];
  const excused = (why: string) => why.startsWith("not served") || why.startsWith("not on this surface");
  return [
    ...c.operations.unreached.filter((u) => !excused(u.why)).map((u) => `operation ${u.id}: ${u.why}`),
    ...c.messages.unreached.filter((u) => !excused(u.why) && !allowMessages.includes(u.id)).map((u) => `message ${u.id}: ${u.why}`),
  ];
}

/**
 * Messages of spec/asyncapi.yaml that flowgate's server never sends: ComfyUI's `notification` has
 * no source in it, and the SSE `log` event is reserved (the spec: not emitted in contract 2.0.0).
 */
export const FLOWGATE_NEVER_SENDS = ["WebSocket /ws notification", "SSE /api/v2/jobs/{id}/events log"];

/** Where the statuses and query parameters a reference-server run reaches are recorded, per surface. */
const RECORDED_COVERAGE = path.join(path.dirname(fileURLToPath(import.meta.url)), "coverage-recorded.json");

type Recorded = Record<string, { statuses: string[]; queryParameters: string[] }>;

/** The documented statuses and query parameters a run reached (every one of the specs not in its `unreached`). */
export function reachedDetail(r: Report): { statuses: string[]; queryParameters: string[] } {
  // An index of nothing reached lists every id of the specs as unreached.
  const all = new Coverage("").index(() => undefined);
  const missed = (k: "statuses" | "queryParameters") => new Set(r.coverage?.[k].unreached.map((u) => u.id) ?? all[k].unreached.map((u) => u.id));
  const reached = (k: "statuses" | "queryParameters") => all[k].unreached.map((u) => u.id).filter((id) => !missed(k).has(id));
  return { statuses: reached("statuses"), queryParameters: reached("queryParameters") };
}

/**
 * The recorded statuses and query parameters of `surface` that this run did not reach: empty
 * when it reached at least the recorded set. With FLOWGATE_RECORD_COVERAGE=1 the run's own
 * reach is recorded instead (and nothing is missing).
 */
export function belowRecordedCoverage(r: Report, surface: string): string[] {
  const recorded: Recorded = existsSync(RECORDED_COVERAGE) ? (JSON.parse(readFileSync(RECORDED_COVERAGE, "utf8")) as Recorded) : {};
  const now = reachedDetail(r);
  if (process.env.FLOWGATE_RECORD_COVERAGE === "1") {
    recorded[surface] = now;
    writeFileSync(RECORDED_COVERAGE, `${JSON.stringify(recorded, null, 2)}\n`);
    return [];
  }
  const was = recorded[surface];
  if (!was) return [`no coverage recorded for ${surface} (run with FLOWGATE_RECORD_COVERAGE=1)`];
  // Why the run missed it, as the coverage index says (a check skipped, and its reason).
  const why = (k: "statuses" | "queryParameters", id: string) => r.coverage?.[k].unreached.find((u) => u.id === id)?.why ?? "never reached";
  return [
    ...was.statuses.filter((s) => !now.statuses.includes(s)).map((s) => `status ${s}: recorded, not reached (${why("statuses", s)})`),
    ...was.queryParameters
      .filter((q) => !now.queryParameters.includes(q))
      .map((q) => `query parameter ${q}: recorded, not reached (${why("queryParameters", q)})`),
  ];
}
