// Every endpoint of the seed's tables and every code of its error table is in the spec, with the
// seed's status. The seed is read from ../shared, where the contract lives; without it those
// comparisons skip, and the spec's own consistency is still checked.
import { describe, expect, it } from "vitest";
import { deref, loadOpenApi, operations, type JsonObject } from "../../generators/spec-files.ts";
import { readShared, WITHOUT_SHARED } from "../shared-contract.ts";

const seed = readShared("seed/workflow-service-spec.md");
const doc = loadOpenApi();

function seedEndpoints(): Array<[string, string]> {
  const found: Array<[string, string]> = [];
  if (seed === null) return found;
  for (const m of seed.matchAll(/^#### (GET|POST|PUT|DELETE|HEAD) (\/\S+)$/gm)) found.push([m[1]!, m[2]!]);
  for (const m of seed.matchAll(/^\| (GET|POST|PUT|DELETE|HEAD) (\/[^\s|?]+)/gm)) found.push([m[1]!, m[2]!]);
  return found;
}

function seedErrorCodes(): Array<[string, number]> {
  if (seed === null) return [];
  const section = seed.slice(seed.indexOf("### v2 envelope"), seed.indexOf("### Hosted interface", seed.indexOf("### v2 envelope")));
  return [...section.matchAll(/^\| ([a-z_]+) \| (\d{3})/gm)].map((m) => [m[1]!, Number(m[2])]);
}

const codeEnum = ((doc.components as JsonObject).schemas as Record<string, JsonObject>).ErrorCode!.enum as string[];
const statusesByCode = new Map<string, Set<number>>();
for (const { op } of operations(doc)) {
  for (const [status, resp] of Object.entries(op.responses as JsonObject)) {
    for (const code of (deref<JsonObject>(doc, resp)["x-error-codes"] as string[] | undefined) ?? []) {
      if (!statusesByCode.has(code)) statusesByCode.set(code, new Set());
      statusesByCode.get(code)!.add(Number(status));
    }
  }
}

describe.skipIf(seed === null)(`the spec covers the seed${WITHOUT_SHARED}`, () => {
  const endpoints = seedEndpoints();
  it("the seed tables were read (guards the parser)", () => {
    expect(endpoints.length).toBeGreaterThanOrEqual(15);
    expect(seedErrorCodes().length).toBe(14);
  });

  const specOps = new Set(operations(doc).map((o) => `${o.method.toUpperCase()} ${o.path}`));
  it.each(endpoints.map(([m, p]) => `${m} ${p}`))("%s is in spec/openapi.yaml", (key) => {
    expect(specOps.has(key), `${key} missing`).toBe(true);
  });

  it.each(seedErrorCodes())("error code %s is declared with status %i and no other", (code, status) => {
    expect(codeEnum).toContain(code);
    expect([...(statusesByCode.get(code) ?? [])]).toEqual([status]);
  });
});

describe("the spec's own error codes and version", () => {
  it("every declared error code has exactly one status across the spec (ERR-2)", () => {
    for (const [code, statuses] of statusesByCode) expect(statuses.size, code).toBe(1);
    for (const code of codeEnum) expect(statusesByCode.has(code), `${code} is never declared`).toBe(true);
  });

  it("info.version is a 2.x minor of the v2 contract, 2.2.0 with labels, listing items and logs (VER-1)", () => {
    expect((doc.info as JsonObject).version).toBe("2.2.0");
  });
});
