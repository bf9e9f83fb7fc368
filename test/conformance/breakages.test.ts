// The suite can fail: each breakage of the double is reported under the rule it breaks, and
// nothing else fails. Where two rules of CONTRACT-RULES.md state the same thing, both are named.
import { describe, expect, it } from "vitest";
import type { Breakage, DoubleOptions } from "./double/server.ts";
import type { ConformanceOptions } from "../../conformance/index.ts";
import { failureLines, runAgainstDouble } from "./helpers.ts";

const serverless: DoubleOptions = { surface: "serverless", prefix: "/deployment/abc" };
const twoCallers: DoubleOptions = { tokens: ["tok-a", "tok-b"] };

const CASES: Array<{ breakage: Breakage; rules: string[]; double?: DoubleOptions; run?: Partial<ConformanceOptions> }> = [
  { breakage: "omitField", rules: ["JOB-1"] },
  { breakage: "logsOnPost", rules: ["LOG-5", "SUB-5"] },
  { breakage: "sseIdLines", rules: ["SSE-1"] },
  { breakage: "wrongErrorCode", rules: ["ERR-2"] },
  { breakage: "retryAfterNotInteger", rules: ["ERR-3"], double: { queueBound: 3 }, run: { fillQueue: 10 } },
  { breakage: "idemAcceptsDifferentBody", rules: ["IDEM-2"] },
  { breakage: "idemRace", rules: ["IDEM-2"] },
  { breakage: "statusOutsideEnum", rules: ["ST-1"] },
  { breakage: "brokenSelfLink", rules: ["URL-3"] },
  { breakage: "unprefixedLinks", rules: ["URL-2"], double: serverless, run: { surface: "serverless" } },
  { breakage: "nullLogs", rules: ["LOG-3"] },
  { breakage: "progressOutOfRange", rules: ["PRG-1"] },
  // The output's size_bytes disagrees with the bytes (OUT-5) and so with its asset record (AST-1).
  { breakage: "outputSizeMismatch", rules: ["AST-1", "OUT-5"] },
  { breakage: "errorOnSucceeded", rules: ["JERR-2"] },
  { breakage: "cancelRunningDirect", rules: ["CAN-2"] },
  { breakage: "queuePositionWhileRunning", rules: ["JOB-6"] },
  { breakage: "leakExtraData", rules: ["SUB-11"] },
  { breakage: "serverErrorOnWrongType", rules: ["ERR-1"] },
  { breakage: "wsLittleEndian", rules: ["WS-5"] },
  { breakage: "sseSkipsRunning", rules: ["SSE-2"] },
  { breakage: "noUrlExpiresAt", rules: ["OUT-1"] },
  { breakage: "logHeadKept", rules: ["LOG-7"], double: serverless, run: { surface: "serverless", only: ["LOG"] } },
  { breakage: "locationElsewhere", rules: ["LNK-1"] },
  { breakage: "deleteKeepsAsset", rules: ["AST-4"] },
  { breakage: "outputsAtEnd", rules: ["JOB-4"] },
  { breakage: "contentSkipsAuth", rules: ["AUTH-4"], double: { tokens: ["tok-a"] }, run: { token: "tok-a" } },
  // Well-formed fields that say something else than they mean.
  { breakage: "metricsInSeconds", rules: ["JOB-5"] },
  { breakage: "queuePositionConstant", rules: ["JOB-6"] },
  { breakage: "urlExpiresAtLate", rules: ["OUT-5"] },
  { breakage: "etagPerAsset", rules: ["AST-3"] },
  { breakage: "createdNewAlwaysTrue", rules: ["AST-4"] },
  { breakage: "createdNewAcrossCallers", rules: ["AST-4"], double: twoCallers, run: { token: "tok-a", otherToken: "tok-b" } },
  { breakage: "outputExpiresApart", rules: ["AST-1"] },
  { breakage: "nonRetryableForEveryFailure", rules: ["HOST-5"] },
  { breakage: "errorForEveryFailure", rules: ["HOST-5"] },
  { breakage: "hostedNotFoundAsInvalid", rules: ["HOST-9"] },
  { breakage: "previewDeclaredPng", rules: ["WS-5"] },
  { breakage: "previewNamesOtherNode", rules: ["WS-5"] },
  { breakage: "cachedNodesRun", rules: ["WS-3"] },
];

describe("the suite's verdicts are precise", () => {
  it("terminalOutsideEnum -> ST-1, at once: a status outside the enum stops polling instead of waiting for the timeout", { timeout: 300_000 }, async () => {
    // A job timeout longer than the test's own: a check that polled to it would time the test out.
    const report = await runAgainstDouble({ breaks: ["terminalOutsideEnum"] }, { jobTimeoutMs: 600_000, only: ["ST", "OUT"] });
    expect(report.failedRules, failureLines(report)).toEqual(["ST-1"]);
    const stopped = report.results.filter((r) => r.status === "skipped" && /outside the contract's statuses/.test(r.reason ?? ""));
    expect(stopped.length).toBeGreaterThan(0);
  });

  it("IDEM-7 tells a new job run for a reused key from the first job replayed", { timeout: 300_000 }, async () => {
    const report = await runAgainstDouble({ breaks: ["idemNewJobOnReuse"] }, { only: ["IDEM"] });
    const idem7 = report.results.find((r) => r.rule === "IDEM-7" && r.kind === "check")!;
    expect(idem7.status).toBe("failed");
    expect(idem7.failures.map((f) => f.message).join("\n")).toMatch(/with a new job .+ the key was not enforced/);
    expect(idem7.failures.map((f) => f.message).join("\n")).not.toMatch(/replayed/);
  });
});

describe.concurrent("each breakage of the double is reported under its rule, and only there", () => {
  for (const c of CASES) {
    it(`${c.breakage} -> ${c.rules.join(", ")}`, { timeout: 300_000 }, async () => {
      const report = await runAgainstDouble({ ...c.double, breaks: [c.breakage] }, c.run);
      expect(report.ok).toBe(false);
      expect(report.failedRules, failureLines(report)).toEqual(c.rules);
    });
  }
});
