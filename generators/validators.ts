// ajv validators compiled ahead of time (standalone code), so nothing compiles schemas at start-up.
import { Ajv2020, type AnySchema } from "ajv/dist/2020.js";
import { createRequire } from "node:module";
import { BANNER, deref, operations, type Json, type JsonObject } from "./spec-files.ts";

// These CommonJS modules export a function as `default`, which NodeNext typing cannot see through an ESM import.
const require = createRequire(import.meta.url);
const addFormats = require("ajv-formats") as typeof import("ajv-formats").default;
const standaloneCode = require("ajv/dist/standalone/index.js") as typeof import("ajv/dist/standalone/index.js").default;

import { OPENAPI_SCHEMA_ID } from "./asyncapi.ts";

export { OPENAPI_SCHEMA_ID };
const GEN_ID = "https://flowgate.dev/gen/";

/** A 2020-12 ajv that accepts the OpenAPI vocabulary in strict mode. */
export function createAjv(options: { coerceTypes?: boolean } = {}): Ajv2020 {
  const ajv = new Ajv2020({
    strict: true,
    // OpenAPI schemas often require a property that a sibling allOf branch defines.
    strictRequired: false,
    // ComfyUI's queue entry is an open tuple: later versions append items.
    strictTuples: false,
    allErrors: true,
    coerceTypes: options.coerceTypes ?? false,
    useDefaults: options.coerceTypes ?? false,
    code: { source: true, esm: true },
  });
  addFormats(ajv);
  // OpenAPI keywords and the document wrapper are annotations for validation purposes.
  for (const k of ["components", "example", "discriminator", "xml", "externalDocs", "x-terminal", "x-known-values", "x-non-retryable", "x-from-job-status"])
    ajv.addKeyword(k);
  for (const f of ["int32", "int64", "float", "double"]) ajv.addFormat(f, { type: "number", validate: () => true });
  return ajv;
}

/** Registers the OpenAPI component schemas so `#/components/schemas/X` refs resolve under OPENAPI_SCHEMA_ID. */
export function addOpenApiSchemas(ajv: Ajv2020, doc: JsonObject): void {
  const components = doc.components as JsonObject;
  ajv.addSchema({ $id: OPENAPI_SCHEMA_ID, components: { schemas: components.schemas } } as AnySchema);
}

/** Rewrites local refs of an inline schema so they resolve against the registered OpenAPI document. */
function absolutize(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(absolutize);
  if (schema && typeof schema === "object") {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(schema)) {
      out[k] = k === "$ref" && typeof v === "string" && v.startsWith("#/") ? OPENAPI_SCHEMA_ID + v : absolutize(v);
    }
    return out;
  }
  return schema;
}

export interface ValidatorPlan {
  /** Export name -> schema, for the strict (non-coercing) validators of bodies, responses, events. */
  strict: Record<string, Json>;
  /** Export name -> schema, for the coercing validators of path, query and header parameters. */
  params: Record<string, Json>;
}

/** Validator export names of one operation: used by the route table generator too. */
export function validatorNames(operationId: string) {
  return {
    request: `request_${operationId}`,
    path: `path_${operationId}`,
    query: `query_${operationId}`,
    header: `header_${operationId}`,
    response: (status: string) => `response_${operationId}_${status}`,
  };
}

/** Which schemas get a validator, and under which export name. */
export function planValidators(doc: JsonObject, eventSchemas: Record<string, Json>): ValidatorPlan {
  const strict: Record<string, Json> = {};
  const params: Record<string, Json> = {};
  const schemas = (doc.components as JsonObject).schemas as JsonObject;
  for (const name of Object.keys(schemas)) strict[`schema_${name}`] = { $ref: `${OPENAPI_SCHEMA_ID}#/components/schemas/${name}` };
  for (const { op, pathItem } of operations(doc)) {
    const id = op.operationId as string;
    const names = validatorNames(id);
    const body = deref<JsonObject | undefined>(doc, op.requestBody as Json);
    const jsonBody = (body?.content as JsonObject | undefined)?.["application/json"] as JsonObject | undefined;
    if (jsonBody?.schema) strict[names.request] = absolutize(jsonBody.schema);
    const allParams = [...((pathItem.parameters as Json[]) ?? []), ...((op.parameters as Json[]) ?? [])].map((p) => deref<JsonObject>(doc, p));
    for (const location of ["path", "query", "header"] as const) {
      const ps = allParams.filter((p) => p.in === location);
      if (ps.length === 0) continue;
      const key = (p: JsonObject) => (location === "header" ? String(p.name).toLowerCase() : String(p.name));
      params[names[location]] = {
        type: "object",
        properties: Object.fromEntries(ps.map((p) => [key(p), absolutize(p.schema as Json)])),
        required: ps.filter((p) => p.required).map(key),
      };
    }
    for (const [status, resp] of Object.entries((op.responses as JsonObject) ?? {})) {
      const r = deref<JsonObject>(doc, resp);
      const json = (r.content as JsonObject | undefined)?.["application/json"] as JsonObject | undefined;
      if (json?.schema) strict[names.response(status)] = absolutize(json.schema);
    }
  }
  for (const [key, schema] of Object.entries(eventSchemas)) strict[`event_${key.replace(/[^A-Za-z0-9]/g, "_")}`] = schema;
  return { strict, params };
}

function compile(doc: JsonObject, schemas: Record<string, Json>, coerceTypes: boolean): string {
  const ajv = createAjv({ coerceTypes });
  addOpenApiSchemas(ajv, doc);
  const exports: Record<string, string> = {};
  for (const [name, schema] of Object.entries(schemas)) {
    const id = `${GEN_ID}${name}`;
    ajv.addSchema({ ...(schema as JsonObject), $id: id } as AnySchema);
    exports[name] = id;
  }
  const code = standaloneCode(ajv, exports);
  // ajv's ESM output still calls require() for format helpers (an open ajv bug).
  return `${BANNER}import { createRequire } from "node:module";\nconst require = createRequire(import.meta.url);\n${code}\n`;
}

function declarations(names: string[]): string {
  return `${BANNER}import type { ValidateFunction } from "ajv";\n\n${names.map((n) => `export declare const ${n}: ValidateFunction;`).join("\n")}\n`;
}

/** Sources of generated/validators.js, validators.d.ts, param-validators.js and param-validators.d.ts. */
export function validatorSources(doc: JsonObject, eventSchemas: Record<string, Json>): Record<string, string> {
  const plan = planValidators(doc, eventSchemas);
  return {
    "validators.js": compile(doc, plan.strict, false),
    "validators.d.ts": declarations(Object.keys(plan.strict)),
    "param-validators.js": compile(doc, plan.params, true),
    "param-validators.d.ts": declarations(Object.keys(plan.params)),
  };
}
