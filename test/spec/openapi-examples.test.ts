// Every example in spec/openapi.yaml is valid against its own schema, and every schema and
// operation has one, so that the mock serves realistic, valid data.
import { describe, expect, it } from "vitest";
import { deref, loadOpenApi, operations, type Json, type JsonObject } from "../../generators/spec-files.ts";
import { addOpenApiSchemas, createAjv, OPENAPI_SCHEMA_ID } from "../../generators/validators.ts";

const doc = loadOpenApi();
const ajv = createAjv();
addOpenApiSchemas(ajv, doc);
const schemas = (doc.components as JsonObject).schemas as Record<string, JsonObject>;

function validatorFor(schema: Json) {
  const s = JSON.parse(JSON.stringify(schema).replaceAll('"$ref":"#/', `"$ref":"${OPENAPI_SCHEMA_ID}#/`));
  return ajv.compile(s);
}

/** Examples of a media type object: `example` or each `examples` entry (after resolving refs). */
function mediaExamples(media: JsonObject): Json[] {
  if ("example" in media) return [media.example as Json];
  return Object.values((media.examples as JsonObject) ?? {}).map((e) => deref<JsonObject>(doc, e).value as Json);
}

describe("spec/openapi.yaml examples", () => {
  it.each(Object.keys(schemas))("schema %s has examples that validate", (name) => {
    const schema = schemas[name]!;
    // Multipart request schemas describe form fields, not a JSON value an example could show.
    const examples = (schema.examples as Json[] | undefined) ?? [];
    const exempt = ["UploadAssetRequest", "HostedUploadImageRequest", "HostedUploadMaskRequest", "HostedNodeInputSpec"];
    if (!exempt.includes(name)) expect(examples.length, `${name} has no examples`).toBeGreaterThan(0);
    const validate = validatorFor({ $ref: `#/components/schemas/${name}` });
    for (const ex of examples) expect(validate(ex), JSON.stringify(validate.errors)).toBe(true);
  });

  const ops = operations(doc);
  it.each(ops.map((o) => [o.op.operationId as string, o] as const))("operation %s: every JSON body example validates", (_id, o) => {
    const body = deref<JsonObject | undefined>(doc, o.op.requestBody as Json);
    const media: Array<[string, JsonObject]> = [];
    for (const [type, m] of Object.entries((body?.content as JsonObject) ?? {})) media.push([`request ${type}`, m as JsonObject]);
    for (const [status, resp] of Object.entries(o.op.responses as JsonObject)) {
      const r = deref<JsonObject>(doc, resp);
      for (const [type, m] of Object.entries((r.content as JsonObject) ?? {})) media.push([`${status} ${type}`, m as JsonObject]);
    }
    for (const [where, m] of media) {
      if (!where.includes("application/json")) continue;
      const schema = m.schema as Json;
      const examples = mediaExamples(m);
      const schemaExamples = (deref<JsonObject>(doc, schema).examples as Json[] | undefined) ?? [];
      expect(examples.length + schemaExamples.length, `${o.op.operationId} ${where} has no example`).toBeGreaterThan(0);
      const validate = validatorFor(schema);
      for (const ex of examples) {
        expect(validate(ex), `${o.op.operationId} ${where}: ${JSON.stringify(validate.errors)}`).toBe(true);
      }
    }
  });

  it("JobWithoutLogs rejects a job carrying logs (LOG-5 is enforced by the validators)", () => {
    const queued = deref<JsonObject>(doc, { $ref: "#/components/examples/QueuedJob" }).value as JsonObject;
    const withLogs = { ...queued, logs: { text: "", truncated: false, captured_at: "2026-11-21T10:00:00Z" } };
    expect(validatorFor({ $ref: "#/components/schemas/JobWithoutLogs" })(withLogs)).toBe(false);
    expect(validatorFor({ $ref: "#/components/schemas/Job" })(withLogs)).toBe(true);
  });

  it("a job missing a required nullable field is rejected (JOB-1)", () => {
    const queued = { ...(deref<JsonObject>(doc, { $ref: "#/components/examples/QueuedJob" }).value as JsonObject) };
    delete queued.started_at;
    expect(validatorFor({ $ref: "#/components/schemas/Job" })(queued)).toBe(false);
  });
});
