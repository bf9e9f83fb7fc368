// The checks of GET /readyz as the docs name them, against the spec's example of a ready answer
// (the spec is where the checks are written first).
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { read } from "./markdown.ts";

const spec = parse(read("spec/openapi.yaml")) as {
  paths: Record<string, { get: { responses: Record<string, { content: Record<string, { example: { checks: Record<string, boolean> } }> }> } }>;
};
const CHECKS = Object.keys(spec.paths["/readyz"]!.get.responses["200"]!.content["application/json"]!.example.checks).sort();

describe("the readiness checks in the docs", () => {
  it("are the spec's, in docs/metrics.md's readiness_check row", () => {
    expect(CHECKS).toContain("blobs");
    const row = read("docs/metrics.md")
      .split("\n")
      .find((l) => l.startsWith("| `flowgate_readiness_check`"))!;
    const named = /each check of `\/readyz` \(([^)]*)\)/.exec(row)![1]!;
    expect([...named.matchAll(/`(\w+)`/g)].map((m) => m[1]).sort()).toEqual(CHECKS);
  });

  it("are all named in docs/guarantees.md", () => {
    const line = /`GET \/readyz` \(([^)]*)/.exec(read("docs/guarantees.md").replace(/\n\s*/g, " "))![1]!;
    for (const check of CHECKS) expect(line, check).toContain(check);
  });
});
