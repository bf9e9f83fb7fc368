// The hosted job API checks (HJOB, the project's extension group for ComfyUI's /api/jobs) skip,
// saying why, against a surface that does not serve the job API (the double answers 404 there);
// the reference server's, the comfyui front's and PostgreSQL's suite runs check that they pass.
import { describe, expect, it } from "vitest";
import { failureLines, runAgainstDouble } from "./helpers.ts";

describe("the hosted job API checks", () => {
  it("skip with the reason where GET /api/jobs answers 404", { timeout: 300_000 }, async () => {
    const report = await runAgainstDouble({}, { only: ["HJOB"] });
    expect(report.failedRules, failureLines(report)).toEqual([]);
    const hjob = report.results.filter((r) => r.group === "HJOB" && r.kind === "check");
    expect(hjob.map((r) => r.rule)).toEqual(["HJOB-1", "HJOB-2", "HJOB-3", "HJOB-4", "HJOB-5", "HJOB-6", "HJOB-7", "HJOB-8"]);
    for (const r of hjob) {
      expect(r.status, r.rule).toBe("skipped");
      expect(r.reason, r.rule).toMatch(/GET \/api\/jobs answered 404: the surface does not serve ComfyUI's job API/);
    }
  });
});
