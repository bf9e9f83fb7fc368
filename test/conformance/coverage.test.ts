// The coverage index: computed from the specs, filled in by what a run saw, and printed in every report.
import { describe, expect, it } from "vitest";
import { Coverage, CONTRACT_ROUTES, receivedMessages } from "../../conformance/machinery/coverage.ts";
import { formatConsole, toJUnit } from "../../conformance/machinery/report.ts";
import { buildReport, resolveOptions } from "../../conformance/runner.ts";
import { belowRecordedCoverage, reachedDetail } from "./helpers.ts";

describe("the coverage index", () => {
  it("counts operations, statuses, query parameters and messages from the specs", () => {
    const c = new Coverage("/deployment/x");
    c.exchange("GET", "http://h/deployment/x/api/v2/jobs?status=queued&metadata[a]=b", 200);
    c.exchange("GET", "http://h/deployment/x/api/v2/jobs/abc", 404);
    c.exchange("GET", "http://h/healthz", 200); // an operations endpoint: outside the index
    c.message("sse", "status");
    c.message("ws", "executing");
    c.binary(4);
    c.message("ws", "not_in_the_spec");
    const idx = c.index(({ operation }) => (operation?.family === "hosted" ? "not served: test" : undefined));
    expect(idx.operations.total).toBe(CONTRACT_ROUTES.length);
    expect(idx.operations.reached).toBe(2);
    expect(idx.operations.unreached.find((u) => u.id.includes("(hostedView)"))?.why).toBe("not served: test");
    expect(idx.operations.unreached.find((u) => u.id.includes("(createJob)"))?.why).toBe("never reached");
    expect(idx.statuses.unreached.some((u) => u.id === "listJobs 200")).toBe(false);
    expect(idx.statuses.unreached.some((u) => u.id === "getJob 404")).toBe(false);
    expect(idx.statuses.unreached.find((u) => u.id === "getJob 200")?.why).toBe("never reached");
    expect(idx.queryParameters.unreached.map((u) => u.id)).not.toContain("listJobs ?metadata");
    expect(idx.queryParameters.unreached.map((u) => u.id)).not.toContain("listJobs ?status");
    expect(idx.queryParameters.unreached.map((u) => u.id)).toContain("listJobs ?cursor");
    expect(idx.messages.total).toBe(receivedMessages().length);
    expect(idx.messages.reached).toBe(3);
    expect(idx.messages.unreached.map((u) => u.id)).toContain("WebSocket /ws binary 3 (text)");
  });

  it("appears in the console, JSON and JUnit reports with what was not reached", () => {
    const c = new Coverage("");
    c.exchange("POST", "http://h/api/v2/jobs", 201);
    const report = buildReport(
      resolveOptions({ baseUrl: "http://h" }),
      false,
      Date.now(),
      [],
      c.index(() => undefined),
    );
    const text = formatConsole(report);
    expect(text).toMatch(/coverage: operations 1\/\d+, statuses 1\/\d+, messages 0\/\d+, query parameters 0\/\d+$/);
    expect(text).toMatch(/not reached \(operations\), never reached: GET \/api\/v2\/jobs \(listJobs\)/);
    expect(JSON.parse(JSON.stringify(report)).coverage.operations.reached).toBe(1);
    expect(toJUnit(report)).toMatch(/<property name="coverage.operations" value="1\/\d+"\/>/);
  });
});

describe("the recorded coverage gate", () => {
  // Recording mode writes the file instead of comparing: not a run to record from.
  it.skipIf(process.env.FLOWGATE_RECORD_COVERAGE === "1")("names each recorded status and query parameter a run did not reach", () => {
    const c = new Coverage("");
    c.exchange("POST", "http://h/api/v2/jobs", 201);
    const report = buildReport(
      resolveOptions({ baseUrl: "http://h" }),
      false,
      Date.now(),
      [],
      c.index(() => undefined),
    );
    expect(reachedDetail(report)).toEqual({ statuses: ["createJob 201"], queryParameters: [] });
    const below = belowRecordedCoverage(report, "self-hosted");
    expect(below.length).toBeGreaterThan(10);
    // Each line says why the run missed it, as the coverage index does.
    expect(below).toContain("status getJob 200: recorded, not reached (getJob not called)");
    expect(below).toContain("query parameter listJobs ?cursor: recorded, not reached (listJobs not called)");
    expect(below.some((line) => line.startsWith("status createJob 201:"))).toBe(false);
  });
});
