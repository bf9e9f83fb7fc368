// The Prism mock (`npm run mock`) serves examples that the generated validators accept.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMock, type Mock } from "./mock-server.ts";
import * as validators from "../../generated/validators.js";

describe("npm run mock", () => {
  let mock: Mock;
  let base: string;

  beforeAll(async () => {
    mock = await startMock();
    base = mock.base;
  }, 90_000);

  afterAll(() => mock?.stop());

  it("POST /api/v2/jobs answers 201 with a valid job without logs", async () => {
    const res = await fetch(`${base}/api/v2/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ workflow: { "1": { class_type: "PrimitiveString", inputs: { value: "x" } } } }),
    });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(validators.response_createJob_201(body), JSON.stringify(validators.response_createJob_201.errors)).toBe(true);
  });

  it("GET /api/v2/jobs/{id} answers 200 with a valid job", async () => {
    const res = await fetch(`${base}/api/v2/jobs/0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(validators.response_getJob_200(body), JSON.stringify(validators.response_getJob_200.errors)).toBe(true);
  });

  it("a body the spec forbids is refused, not answered with a job", async () => {
    const res = await fetch(`${base}/api/v2/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ workflow: {}, webhook_url: "http://example.invalid" }),
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });
});
