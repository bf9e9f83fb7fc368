// The labels checks (LBL, the project's extension group for contract 2.1) against the double: they
// pass where it takes labels, skip with the reason where it declines them (422
// metadata_not_supported) while LBL-6 checks how it declines, and each breakage of a labels rule
// fails that rule and no other.
import { describe, expect, it } from "vitest";
import type { Breakage, DoubleOptions } from "./double/server.ts";
import { failureLines, runAgainstDouble } from "./helpers.ts";

const ONLY = { only: ["LBL"] };

const CASES: Array<{ breakage: Breakage; rules: string[]; double?: DoubleOptions }> = [
  { breakage: "labelBoundTooTight", rules: ["LBL-1"] },
  { breakage: "metadataInvalidAs400", rules: ["LBL-2"] },
  { breakage: "metadataInvalidNoKey", rules: ["LBL-2"] },
  { breakage: "labelsDroppedOnCancel", rules: ["LBL-3"] },
  { breakage: "labelsMissingOnSse", rules: ["LBL-3"] },
  { breakage: "filterIgnored", rules: ["LBL-4"] },
  { breakage: "filterAnyOf", rules: ["LBL-4"] },
  { breakage: "filterDropsStatus", rules: ["LBL-4"] },
  { breakage: "filterMalformedAccepted", rules: ["LBL-5"] },
  { breakage: "declinedFilterIgnored", rules: ["LBL-6"], double: { labels: false } },
  { breakage: "idemIgnoresLabels", rules: ["LBL-7"] },
];

describe("the labels checks", () => {
  it("pass against a double that takes labels; LBL-6 skips, saying the surface accepts them", { timeout: 300_000 }, async () => {
    const report = await runAgainstDouble({}, ONLY);
    expect(report.failedRules, failureLines(report)).toEqual([]);
    const lbl = report.results.filter((r) => r.group === "LBL" && r.kind === "check");
    expect(lbl.filter((r) => r.status === "passed").map((r) => r.rule)).toEqual(["LBL-1", "LBL-2", "LBL-3", "LBL-4", "LBL-5", "LBL-7"]);
    expect(lbl.find((r) => r.rule === "LBL-6")?.reason).toMatch(/accepts labels/);
  });

  it("skip with the reason against a double that declines labels, where LBL-6 passes", { timeout: 300_000 }, async () => {
    const report = await runAgainstDouble({ labels: false }, ONLY);
    expect(report.failedRules, failureLines(report)).toEqual([]);
    const lbl = report.results.filter((r) => r.group === "LBL" && r.kind === "check");
    expect(lbl.find((r) => r.rule === "LBL-6")?.status).toBe("passed");
    for (const rule of ["LBL-1", "LBL-3", "LBL-4", "LBL-7"]) {
      const r = lbl.find((x) => x.rule === rule);
      expect(r?.status, rule).toBe("skipped");
      expect(r?.reason, rule).toMatch(/declines labels \(422 metadata_not_supported/);
    }
  });
});

describe.concurrent("each breakage of a labels rule fails that rule, and only it", () => {
  for (const c of CASES) {
    it(`${c.breakage} -> ${c.rules.join(", ")}`, { timeout: 300_000 }, async () => {
      const report = await runAgainstDouble({ ...c.double, breaks: [c.breakage] }, ONLY);
      expect(report.failedRules, failureLines(report)).toEqual(c.rules);
    });
  }
});
