// The timeline's invariants: each is broken in the double by one breakage (double/state.ts lists
// them, one line each) and the suite then fails exactly that rule; the unit tests below show that a
// read in flight while the job moved is not taken for a step back.
import { describe, expect, it } from "vitest";
import type { ConformanceOptions } from "../../conformance/index.ts";
import { signatureMismatch, sniff } from "../../conformance/machinery/bytes.ts";
import { Timeline, type Finding } from "../../conformance/machinery/timeline.ts";
import type { Breakage, DoubleOptions } from "./double/server.ts";
import { failureLines, runAgainstDouble } from "./helpers.ts";
import { pngBytes } from "../../conformance/checks/support/support.ts";

const CASES: Array<{ breakage: Breakage; rules: string[]; only: string[]; double?: DoubleOptions; run?: Partial<ConformanceOptions> }> = [
  { breakage: "cancelingReadsRunning", rules: ["ST-3"], only: ["CAN", "ST"] },
  { breakage: "terminalMetricsDrift", rules: ["ST-4"], only: ["ST"] },
  { breakage: "createdAtOnGet", rules: ["JOB-7"], only: ["JOB"] },
  { breakage: "sseProgressRegresses", rules: ["PRG-2"], only: ["PRG"] },
  { breakage: "stepPastSteps", rules: ["PRG-1"], only: ["PRG"] },
  { breakage: "outputsDropOnReread", rules: ["JOB-4"], only: ["OUT", "JOB"] },
  { breakage: "sseAfterTerminal", rules: ["SSE-2"], only: ["SSE"] },
  { breakage: "sseTerminalSubset", rules: ["SSE-2"], only: ["SSE"] },
  { breakage: "getHidesProgressWhileStreamed", rules: ["GEN-3"], only: ["GEN", "PRG"] },
  { breakage: "sseSkipsCanceling", rules: ["SSE-2"], only: ["CAN", "SSE"] },
  { breakage: "assetRecordTypeDiffers", rules: ["AST-1"], only: ["OUT", "AST"] },
  {
    breakage: "listUnprefixed",
    rules: ["URL-2"],
    only: ["AST", "URL"],
    double: { surface: "serverless", prefix: "/deployment/abc" },
    run: { surface: "serverless" },
  },
  { breakage: "hostedFailedAsSuccess", rules: ["HOST-5"], only: ["HOST", "JERR"] },
  { breakage: "wsSuccessForFailed", rules: ["WS-3"], only: ["WS"] },
  { breakage: "rangeOffByOne", rules: ["AST-4"], only: ["AST"] },
  { breakage: "contentRangeTotal", rules: ["AST-4"], only: ["AST"] },
  { breakage: "contentTypeNotBytes", rules: ["OUT-5"], only: ["OUT"] },
  { breakage: "keyInLocation", rules: ["HOST-6"], only: ["HOST"], double: { tokens: ["tok-a"] }, run: { token: "tok-a" } },
  { breakage: "extraDataInHeader", rules: ["SUB-11"], only: ["SUB", "IDEM"] },
  { breakage: "idemReleasedOn5xx", rules: ["IDEM-5"], only: ["IDEM"], double: { upstreamErrorOnKeyed: true } },
  // Only the end-of-run re-read, at least 3 s after the first end, sees the change.
  { breakage: "expiredSoonAfterEnd", rules: ["ST-4"], only: ["ST"], run: { rereadAfterSeconds: 3 } },
];

describe.concurrent("each comparison invariant fails its rule, and only it, when the double breaks it", () => {
  for (const c of CASES) {
    it(`${c.breakage} -> ${c.rules.join(", ")}`, { timeout: 300_000 }, async () => {
      const report = await runAgainstDouble({ ...c.double, breaks: [c.breakage] }, { only: c.only, ...c.run });
      expect(report.failedRules, failureLines(report)).toEqual(c.rules);
      // Both observations are quoted.
      const failure = report.results.find((r) => r.status === "failed" && r.kind === "auto")?.failures[0];
      // The late change is seen by the end-of-run re-read, named as such.
      if (c.breakage === "expiredSoonAfterEnd")
        expect(report.results.flatMap((r) => r.failures).some((f) => /\(end-of-run re-read\) showed expired/.test(f.message))).toBe(true);
      if (failure && !["IDEM-5", "SUB-11", "HOST-6", "URL-2", "PRG-1", "AST-4", "OUT-5"].includes(failure.rule))
        expect(failure.excerpt).toMatch(/earlier: [\s\S]*later: /);
    });
  }

  it("the same groups pass against the whole double", { timeout: 300_000 }, async () => {
    const only = [...new Set(CASES.flatMap((c) => c.only))];
    const report = await runAgainstDouble({}, { only });
    expect(report.failedRules, failureLines(report)).toEqual([]);
  });

  it("a keyed submission answering 500 is retried with its key and refused (IDEM-5 holds), the check skipping with what it saw", {
    timeout: 300_000,
  }, async () => {
    const report = await runAgainstDouble({ upstreamErrorOnKeyed: true }, { only: ["IDEM"] });
    expect(report.failedRules, failureLines(report)).toEqual([]);
    expect(report.results.find((r) => r.rule === "IDEM-5" && r.kind === "auto")?.status).toBe("passed");
    expect(report.results.some((r) => r.status === "skipped" && /answered 500 .*unknown outcome/.test(r.reason ?? ""))).toBe(true);
  });
});

describe("the timeline compares only views that certainly came in order", () => {
  function timeline() {
    const found: Finding[] = [];
    return {
      t: new Timeline(
        "",
        (f) => found.push(f),
        () => undefined,
      ),
      found,
    };
  }
  const job = (status: string, extra: Record<string, unknown> = {}) => ({
    id: "j",
    status,
    created_at: "2026-01-01T00:00:00Z",
    started_at: status === "queued" ? null : "2026-01-01T00:00:01Z",
    completed_at: null,
    progress: null,
    outputs: [],
    ...extra,
  });

  it("a GET in flight while the stream moved on is not a step back", () => {
    const { t, found } = timeline();
    t.add({ job: "j", source: "SSE status", sent: 0, at: 10, stream: "s", kind: "job", status: "running", body: job("running") });
    t.add({ job: "j", source: "SSE status", sent: 0, at: 20, stream: "s", kind: "job", status: "canceling", body: job("canceling") });
    // Asked for at 15, before the canceling event arrived: it may show the job still running.
    t.add({ job: "j", source: "GET", sent: 15, at: 25, kind: "job", status: "running", body: job("running") });
    t.verify();
    expect(found).toEqual([]);
  });

  it("a GET asked for after the stream showed canceling, showing running, is a step back (ST-3), both quoted", () => {
    const { t, found } = timeline();
    t.add({ job: "j", source: "SSE status", sent: 0, at: 20, stream: "s", kind: "job", status: "canceling", body: job("canceling") });
    t.add({ job: "j", source: "GET", sent: 21, at: 25, kind: "job", status: "running", body: job("running") });
    t.verify();
    expect(found.map((f) => f.rule)).toEqual(["ST-3"]);
    expect(found[0]!.earlier?.source).toBe("SSE status");
    expect(found[0]!.later.source).toBe("GET");
  });

  it("progress going back on one stream is PRG-2 whatever the timing", () => {
    const { t, found } = timeline();
    const p = (value: number, step: number) => ({ value, nodes_done: 0, nodes_total: 2, current_node: "1", step, steps: 10 });
    t.add({ job: "j", source: "SSE progress", sent: 0, at: 10, stream: "s", kind: "progress", body: p(0.3, 6) });
    t.add({ job: "j", source: "SSE progress", sent: 0, at: 11, stream: "s", kind: "progress", body: p(0.25, 5) });
    t.verify();
    expect(found.map((f) => f.rule)).toEqual(["PRG-2"]);
  });
});

describe("bytes against their declared type", () => {
  it("tells a PNG declared as WebP, and accepts what matches", () => {
    const png = pngBytes(2, 2, [1, 2, 3, 255]);
    expect(sniff(png)).toBe("PNG");
    expect(signatureMismatch("image/png", png)).toBeUndefined();
    expect(signatureMismatch("image/webp", png)).toMatch(/bytes are PNG/);
    expect(signatureMismatch("text/plain; charset=utf-8", new TextEncoder().encode("héllo"))).toBeUndefined();
    expect(signatureMismatch("application/json", new TextEncoder().encode("{nope"))).toMatch(/not JSON/);
    expect(signatureMismatch("application/octet-stream", png)).toBeUndefined();
  });
});
