// The static subset (--static: shape checks that need no execution) against the Prism mock of the
// spec, which serves the spec's examples. The examples show a job with logs on GET, so the mock
// stands for a serverless surface.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMock, type Mock } from "../spec-tools/mock-server.ts";
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
    expect(
      checks.every((r) => r.status === "passed"),
      JSON.stringify(checks.filter((r) => r.status !== "passed").map((r) => [r.title, r.reason])),
    ).toBe(true);
  });
});

describe("the mock's errors", () => {
  let mock: Mock;
  beforeAll(async () => {
    mock = await startMock();
  }, 90_000);
  afterAll(() => mock?.stop());

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${mock.base}/api/v2/jobs`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

  it("a body the spec forbids gets 400 invalid_request naming each field, as the server answers", async () => {
    const res = await post({ workflow: {}, webhook_url: "http://example.invalid" });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: { code: "invalid_request", message: expect.any(String), details: { fields: [{ field: "webhook_url", reason: "reserved" }] } },
    });
    const query = await fetch(`${mock.base}/api/v2/jobs?limit=1000`);
    expect(query.status).toBe(400);
    expect(((await query.json()) as { error: { details: unknown } }).error.details).toEqual({ fields: [{ field: "limit", reason: "out_of_range" }] });
  });

  it("every error status answers the envelope with a code of that status", async () => {
    const codes: Record<number, string[]> = {
      401: ["unauthorized"],
      404: ["not_found"],
      422: ["invalid_workflow", "workflow_format_ui", "missing_asset", "idempotency_key_reuse", "deployment_stopped"],
      429: ["queue_full", "deployment_not_ready", "rate_limited"],
    };
    for (const [status, allowed] of Object.entries(codes)) {
      const res = await post({ workflow: { "1": { class_type: "PrimitiveString", inputs: { value: "x" } } } }, { prefer: `code=${status}` });
      expect(res.status, status).toBe(Number(status));
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(allowed, `${status}: ${JSON.stringify(body)}`).toContain(body.error.code);
      expect(typeof body.error.message).toBe("string");
    }
    const unknown = await fetch(`${mock.base}/no/such/route`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });
});
