// URL-3: host-relative links resolve against the origin of the response that carried them.
import { describe, expect, it } from "vitest";
import { resolveLink } from "../../src/index.ts";

describe("resolveLink", () => {
  it("joins a host-relative link to the response origin only, never to its path", () => {
    expect(resolveLink("/deployment/abc/api/v2/jobs/1", "https://gw.example.com/deployment/abc/api/v2/jobs")).toBe(
      "https://gw.example.com/deployment/abc/api/v2/jobs/1",
    );
    expect(resolveLink("/api/v2/jobs/1/events", "http://127.0.0.1:8189/api/v2/jobs/1")).toBe("http://127.0.0.1:8189/api/v2/jobs/1/events");
  });

  it("keeps absolute links and refuses anything else", () => {
    expect(resolveLink("https://other.example.com/x", "http://127.0.0.1/")).toBe("https://other.example.com/x");
    expect(() => resolveLink("//evil.example.com/x", "http://127.0.0.1/")).toThrow();
    expect(() => resolveLink("api/v2/jobs/1", "http://127.0.0.1/")).toThrow();
  });
});
