// The static subset (--static: shape checks that need no execution) against the Prism mock of the
// spec, which serves the spec's examples. The examples show a job with logs on GET, so the mock
// stands for a serverless surface.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMock, type Mock } from "../spec/mock-server.ts";
import { ALL_CHECKS, runConformance } from "../../conformance/index.ts";
import { failureLines } from "./helpers.ts";

describe("the static subset against the Prism mock", () => {
  let mock: Mock;
  let base: string;

  beforeAll(async () => {
    mock = await startMock();
    base = mock.base;
  }, 90_000);

  afterAll(() => mock?.stop());

  it("every static check passes, and only static checks ran", { timeout: 120_000 }, async () => {
    const report = await runConformance({ baseUrl: base, static: true, surface: "serverless" });
    expect(failureLines(report)).toBe("");
    expect(report.static).toBe(true);
    const checks = report.results.filter((r) => r.kind === "check");
    expect(checks.length).toBe(ALL_CHECKS.filter((c) => c.static).length);
    expect(checks.every((r) => r.status === "passed"), JSON.stringify(checks.filter((r) => r.status !== "passed").map((r) => [r.title, r.reason]))).toBe(true);
  });
});
