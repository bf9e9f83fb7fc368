// One typed error class per spec ErrorCode, each carrying status, code, message, details, retryAfter.
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { apiError, ERROR_CLASSES, errorFromResponse, FlowgateApiError, QueueFullError, UpstreamError } from "../../src/index.ts";

// The enum of the spec itself, not the client's idea of it.
const spec = parse(readFileSync(new URL("../../spec/openapi.yaml", import.meta.url), "utf8"));
const SPEC_CODES: string[] = spec.components.schemas.ErrorCode.enum;

describe("error classes", () => {
  it("has exactly one class per code of spec ErrorCode, none shared", () => {
    expect(SPEC_CODES.length).toBeGreaterThan(10);
    expect(Object.keys(ERROR_CLASSES).sort()).toEqual([...SPEC_CODES].sort());
    const classes = Object.values(ERROR_CLASSES);
    expect(new Set(classes).size).toBe(classes.length);
    for (const [code, Class] of Object.entries(ERROR_CLASSES)) {
      const err = apiError({ status: 400, code, message: "m" });
      expect(err).toBeInstanceOf(Class);
      expect(err).toBeInstanceOf(FlowgateApiError);
      expect(err.name).toBe(Class.name);
      expect(err.code).toBe(code);
    }
  });

  it("reads status, code, message, details and Retry-After from an envelope answer", async () => {
    const res = new Response(JSON.stringify({ error: { code: "queue_full", message: "The queue is full.", details: { limit: 3 } } }), {
      status: 429,
      headers: { "content-type": "application/json", "retry-after": "7" },
    });
    const err = await errorFromResponse(res, "http://x/api/v2/jobs");
    expect(err).toBeInstanceOf(QueueFullError);
    expect({ status: err.status, code: err.code, message: err.message, details: err.details, retryAfter: err.retryAfter, url: err.url }).toEqual({
      status: 429,
      code: "queue_full",
      message: "The queue is full.",
      details: { limit: 3 },
      retryAfter: 7,
      url: "http://x/api/v2/jobs",
    });
  });

  it("keeps a code it does not know (v2 may add codes) and names answers without an envelope by status", async () => {
    const unknown = await errorFromResponse(new Response(JSON.stringify({ error: { code: "brand_new", message: "new" } }), { status: 418 }));
    expect(unknown.constructor).toBe(FlowgateApiError);
    expect(unknown.code).toBe("brand_new");
    const bare = await errorFromResponse(new Response("<html>bad gateway</html>", { status: 500 }));
    expect(bare).toBeInstanceOf(UpstreamError);
    expect(bare.retryAfter).toBeNull();
  });
});
