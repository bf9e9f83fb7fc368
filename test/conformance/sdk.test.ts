// The SDK checks (the project's extension group for contract 2.2: the official SDK's listing items,
// cursor errors and logs resource) against the double: they pass where it serves logs, SDK-3 skips
// with the reason where the surface declares it serves none, and each breakage of an SDK rule fails
// that rule and no other.
import { describe, expect, it } from "vitest";
import type { Breakage, DoubleOptions } from "./double/server.ts";
import { failureLines, runAgainstDouble } from "./helpers.ts";

const ONLY = { only: ["SDK"] };
const serverless: DoubleOptions = { surface: "serverless", prefix: "/deployment/abc" };
const onServerless = { ...ONLY, surface: "serverless" as const };

const CASES: Array<{ breakage: Breakage; rules: string[] }> = [
  { breakage: "listItemsWithoutUpdateTime", rules: ["SDK-1"] },
  { breakage: "cursorAsInvalidRequest", rules: ["SDK-2"] },
  { breakage: "logsLinkMissing", rules: ["SDK-3"] },
  { breakage: "logsOfRunningJob", rules: ["SDK-4"] },
];

describe("the SDK checks", () => {
  it("pass against a serverless double, which serves logs", { timeout: 300_000 }, async () => {
    const report = await runAgainstDouble(serverless, onServerless);
    expect(report.failedRules, failureLines(report)).toEqual([]);
    const sdk = report.results.filter((r) => r.group === "SDK" && r.kind === "check");
    expect(sdk.filter((r) => r.status === "passed").map((r) => r.rule)).toEqual(["SDK-1", "SDK-2", "SDK-3", "SDK-4"]);
  });

  it("skip SDK-3 with the reason where the surface serves no logs (self-hosted, the demo deployment), where SDK-4 passes", { timeout: 300_000 }, async () => {
    for (const [double, run, reason] of [
      [{}, ONLY, /self-hosted surface declares it serves no logs/],
      [{ ...serverless, demo: true }, { ...onServerless, demo: true }, /demo deployment withholds logs/],
    ] as const) {
      const report = await runAgainstDouble(double, run);
      expect(report.failedRules, failureLines(report)).toEqual([]);
      const sdk = report.results.filter((r) => r.group === "SDK" && r.kind === "check");
      expect(sdk.filter((r) => r.status === "passed").map((r) => r.rule)).toEqual(["SDK-1", "SDK-2", "SDK-4"]);
      expect(sdk.find((r) => r.rule === "SDK-3")?.reason).toMatch(reason);
    }
  });
});

describe.concurrent("each breakage of an SDK rule fails that rule, and only it", () => {
  for (const c of CASES) {
    it(`${c.breakage} -> ${c.rules.join(", ")}`, { timeout: 300_000 }, async () => {
      const report = await runAgainstDouble({ ...serverless, breaks: [c.breakage] }, onServerless);
      expect(report.failedRules, failureLines(report)).toEqual(c.rules);
    });
  }
});
