// generated/enums.ts from the spec's extensions: the known values of open strings, the
// non-retryable codes, the hosted status of each v2 status and the hosted error statuses; a spec
// whose extensions contradict each other fails `npm run generate`.
import { describe, expect, it } from "vitest";
import { enumsSource } from "../../generators/enums.ts";
import { loadOpenApi, type JsonObject } from "../../generators/spec-files.ts";
import { HOSTED_ERROR_TYPE_STATUS, HOSTED_JOB_STATUS_BY_JOB_STATUS, JOB_STATUSES, NON_RETRYABLE_JOB_ERROR_CODES } from "../../generated/enums.ts";
import { hostedStatus } from "../../src/server/hosted/status-map.ts";

/** The spec, with `edit` applied to a fresh copy. */
function specWith(edit: (schemas: Record<string, JsonObject>, responses: Record<string, JsonObject>) => void): JsonObject {
  const doc = loadOpenApi();
  const components = doc.components as JsonObject;
  edit(components.schemas as Record<string, JsonObject>, components.responses as Record<string, JsonObject>);
  return doc;
}

const codeOf = (schemas: Record<string, JsonObject>) => (schemas.JobError!.properties as Record<string, JsonObject>).code!;
const hostedStatusOf = (schemas: Record<string, JsonObject>) => (schemas.HostedJobStatus!.properties as Record<string, JsonObject>).status!;

describe("generated/enums.ts", () => {
  it("gives every v2 status a hosted status, and a failed job with a non-retryable code non_retryable_error", () => {
    expect(Object.keys(HOSTED_JOB_STATUS_BY_JOB_STATUS).sort()).toEqual([...JOB_STATUSES].sort());
    for (const status of JOB_STATUSES) expect(hostedStatus({ status, error: null })).toBe(HOSTED_JOB_STATUS_BY_JOB_STATUS[status]);
    for (const code of NON_RETRYABLE_JOB_ERROR_CODES) expect(hostedStatus({ status: "failed", error: { code, message: "m" } })).toBe("non_retryable_error");
    expect(hostedStatus({ status: "failed", error: { code: "node_execution_error", message: "m" } })).toBe("error");
  });

  it("reads the hosted table's statuses from x-hosted-error-types (a full queue is a 503 there, a 429 an inactive subscription)", () => {
    expect(HOSTED_ERROR_TYPE_STATUS.queue_full).toBe(503);
    expect(HOSTED_ERROR_TYPE_STATUS.inactive_subscription).toBe(429);
    expect(HOSTED_ERROR_TYPE_STATUS.invalid_workflow).toBe(400);
  });

  it("refuses a non-retryable code the field does not know", () => {
    const doc = specWith((schemas) => (codeOf(schemas)["x-non-retryable"] = ["invalid_input", "no_such_code"]));
    expect(() => enumsSource(doc)).toThrow(/x-non-retryable of JobErrorCode names values it does not know: no_such_code/);
  });

  it("refuses a status mapping that leaves out a v2 status or gives an unknown value", () => {
    const missing = specWith((schemas) => delete (hostedStatusOf(schemas)["x-from-job-status"] as JsonObject).expired);
    expect(() => enumsSource(missing)).toThrow(/x-from-job-status of HostedJobStatus leaves out expired/);
    const unknown = specWith((schemas) => ((hostedStatusOf(schemas)["x-from-job-status"] as JsonObject).expired = "gone"));
    expect(() => enumsSource(unknown)).toThrow(/gives values it does not know: gone/);
  });

  it("refuses a hosted error type declared under two statuses", () => {
    const doc = specWith((_, responses) => (responses.HostedInternalError!["x-hosted-error-types"] = ["internal_error", "queue_full"]));
    expect(() => enumsSource(doc)).toThrow(/x-hosted-error-types: queue_full is declared with 2 statuses/);
  });
});
