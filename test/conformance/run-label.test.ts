// Issue #49, item 4: the suite's jobs carry a label naming the run, and it leaves nothing running
// in the server it checked.
import { describe, expect, it } from "vitest";
import { runConformance } from "../../conformance/index.ts";
import { startDouble } from "./double/server.ts";
import { FAST, failureLines } from "./helpers.ts";

const IN_FLIGHT = new Set(["queued", "running", "canceling"]);

describe("what a run leaves in the server it checks", () => {
  it("every v2 job it submits without a body of its own carries conformance-run=<label>, and none is left in flight", { timeout: 300_000 }, async () => {
    const d = await startDouble({});
    try {
      const report = await runConformance({ ...FAST, baseUrl: d.baseUrl, runLabel: "test-run-1", only: ["SUB", "CAN", "PRG", "GET", "LBL"] });
      expect(report.ok, failureLines(report)).toBe(true);
      expect(report.runLabel).toBe("test-run-1");
      const jobs = [...d.state.jobs.values()];
      const labelled = jobs.filter((j) => j.metadata?.["conformance-run"] === "test-run-1");
      // Without the run label: only the LBL checks' submissions about labels themselves (their own
      // label sets, and the three that must have none).
      const own = jobs.filter((j) => !j.metadata["conformance-run"] && Object.keys(j.metadata).length > 0);
      const none = jobs.filter((j) => Object.keys(j.metadata).length === 0);
      expect(labelled.length).toBeGreaterThan(10);
      expect(labelled.length + own.length + none.length).toBe(jobs.length);
      expect(none.length).toBeLessThanOrEqual(3);
      // A cancel asked at the end may take a moment to land: wait for the state, not for a time.
      await expect.poll(() => jobs.filter((j) => IN_FLIGHT.has(j.status)).map((j) => `${j.id} ${j.status}`), { timeout: 20_000 }).toEqual([]);
    } finally {
      await d.close();
    }
  });
});
