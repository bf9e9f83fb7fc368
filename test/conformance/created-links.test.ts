// Every 201 of spec/openapi.yaml names what it created: a required `Location` header and OpenAPI
// `links` to operations that exist and take the created resource's id (for stateful fuzzers).
import { describe, expect, it } from "vitest";
import { loadOpenApi, operations, type JsonObject } from "../../generators/spec-files.ts";

const doc = loadOpenApi();
const ops = operations(doc);
const byId = new Map(ops.map((o) => [o.op.operationId as string, o]));
const created = ops.filter((o) => (o.op.responses as JsonObject)["201"] !== undefined);

describe("the 201 responses of the spec", () => {
  it("there are 201s to check (a job submitted, an asset uploaded, one created from a hash)", () => {
    expect(created.map((o) => o.op.operationId).sort()).toEqual(["createAssetFromHash", "createJob", "uploadAsset"]);
  });

  for (const o of created) {
    it(`${o.op.operationId}: 201 declares a required Location and links to the created resource`, () => {
      const res = (o.op.responses as JsonObject)["201"] as JsonObject;
      const location = (res.headers as JsonObject | undefined)?.Location as JsonObject | undefined;
      expect(location, "Location header").toBeDefined();
      expect(location!.required).toBe(true);
      const links = Object.entries((res.links ?? {}) as Record<string, JsonObject>);
      expect(links.length).toBeGreaterThan(0);
      for (const [name, link] of links) {
        const target = byId.get(link.operationId as string);
        expect(target, `${name} -> ${String(link.operationId)}`).toBeDefined();
        // Each path parameter of the target is filled from the created body's id.
        const params = (target!.op.parameters ?? target!.pathItem.parameters ?? []) as JsonObject[];
        const pathParams = params.map((p) => (p.$ref ? resolve(p.$ref as string) : p)).filter((p) => p.in === "path");
        expect(pathParams.length, name).toBeGreaterThan(0);
        for (const p of pathParams) expect((link.parameters as JsonObject)?.[p.name as string], `${name}.${String(p.name)}`).toBe("$response.body#/id");
        expect(target!.path.includes("{id}"), name).toBe(true);
      }
    });
  }

  it("the job's links reach its read, its events and its cancel; an asset's its record, content and delete", () => {
    const targets = (id: string) =>
      Object.values((((byId.get(id)!.op.responses as JsonObject)["201"] as JsonObject).links ?? {}) as Record<string, JsonObject>)
        .map((l) => l.operationId)
        .sort();
    expect(targets("createJob")).toEqual(["cancelJob", "getJob", "streamJobEvents"]);
    for (const id of ["uploadAsset", "createAssetFromHash"]) expect(targets(id)).toEqual(["deleteAsset", "getAsset", "getAssetContent"]);
  });
});

/** A local `#/components/...` reference's target. */
function resolve(ref: string): JsonObject {
  return ref
    .replace(/^#\//, "")
    .split("/")
    .reduce<JsonObject>((node, key) => node[key] as JsonObject, doc);
}
