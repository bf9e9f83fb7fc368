// The unbroken double passes every check that applies to its surface, so that a failure in
// breakages.test.ts can only come from the breakage.
import { describe, expect, it } from "vitest";
import { failureLines, runAgainstDouble, SURFACE_SETUPS } from "./helpers.ts";

describe.concurrent("the conformance suite against the unbroken double", () => {
  for (const [name, { double, run }] of Object.entries(SURFACE_SETUPS)) {
    it(`${name}: every applicable check passes`, { timeout: 300_000 }, async () => {
      const report = await runAgainstDouble(double, run);
      expect(failureLines(report)).toBe("");
      expect(report.ok).toBe(true);
      expect(report.totals.passed).toBeGreaterThan(60);
    });
  }

  for (const hosted of [true, false]) {
    it(`a surface without the flowgate nodes skips what needs them, with the reason (${hosted ? "from object_info" : "from 422 unknown_class"})`, {
      timeout: 300_000,
    }, async () => {
      const report = await runAgainstDouble({ hosted, missingNodes: ["FlowgateDelay", "FlowgateSampler", "FlowgatePrint"] });
      expect(failureLines(report)).toBe("");
      const reasons = new Map(report.results.filter((r) => r.status === "skipped").map((r) => [r.rule, r.reason ?? ""]));
      for (const rule of ["JOB-4", "PRG-2", "SSE-2", "CAN-2"])
        expect(reasons.get(rule), rule).toMatch(
          hosted ? /lists no FlowgateDelay|lists no FlowgateSampler/ : /422 unknown_class for nodes? \w+ \(Flowgate(Delay|Sampler)\)/,
        );
      expect(report.results.find((r) => r.title.startsWith("GEN-1 an API-format graph"))?.status).toBe("passed");
    });
  }

  it("the full setups leave only surface-specific checks skipped", { timeout: 300_000 }, async () => {
    const { double, run } = SURFACE_SETUPS["serverless behind the gateway mount"]!;
    // With the random sequences on, as a full run has them.
    const report = await runAgainstDouble(double, { ...run, explore: 2 });
    const skipped = report.results.filter((r) => r.status === "skipped");
    // Serverless serves no hosted interface (HOST, HJOB, WS); the rest of what it skips belongs to other surfaces
    // (LBL-6 to a surface that declines labels).
    for (const { rule, title, reason } of skipped)
      expect(rule, `${title} was skipped: ${reason}`).toMatch(/^(HOST|HJOB|WS|AUTH-[235]|LOG-[14]|SUB-10|ERR-[45]|LBL-6$)/);
  });
});
