// Reads spec/asyncapi.yaml (the event contract) and derives what the rest of flowgate needs from
// it: validation diagnostics, plain JSON Schemas of every message payload, and TypeScript types.
// Shared schemas stay in spec/openapi.yaml and are only ever referenced, so the output refers to
// them by the OpenAPI document's $id instead of copying them.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Parser, fromFile } from "@asyncapi/parser";
import { parse as parseYaml } from "yaml";

/** $id under which consumers register spec/openapi.yaml with ajv; payload schemas point into it. */
export const OPENAPI_SCHEMA_ID = "https://flowgate.dev/spec/openapi.json";

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Default location of the event contract. */
export const ASYNCAPI_PATH = path.join(REPO_ROOT, "spec", "asyncapi.yaml");

const JSON_SCHEMA_2020 = "https://json-schema.org/draft/2020-12/schema";
const OPENAPI_REF = /^\.\/openapi\.yaml#\/components\/schemas\/([A-Za-z0-9_.-]+)$/;
const LOCAL_REF = /^#\/components\/schemas\/([A-Za-z0-9_.-]+)$/;
// The brief fixes this key; the layout field that carries the type-4 metadata JSON is "metadata".
const BINARY_METADATA_KEY = "binary.preview_metadata";
// SSE rides on plain HTTP in the document (AsyncAPI has no SSE binding), so the protocol of a
// channel's servers tells the two interfaces apart.
const PREFIX_BY_PROTOCOL: Record<string, string> = { http: "sse", https: "sse", ws: "ws", wss: "ws" };

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Diagnostics of the AsyncAPI parser: errors are severity 0, warnings severity 1 (info and hints are left out). */
export async function validateAsyncApi(specPath: string = ASYNCAPI_PATH): Promise<{ errors: string[]; warnings: string[] }> {
  const parser = new Parser();
  let diagnostics;
  try {
    // fromFile gives the parser the file's location, so the relative refs into openapi.yaml resolve.
    ({ diagnostics } = await fromFile(parser, specPath).parse());
  } catch (err) {
    return { errors: [`${specPath}: ${(err as Error).message}`], warnings: [] };
  }
  const errors: string[] = [];
  const warnings: string[] = [];
  for (const d of diagnostics) {
    const where = d.path.length > 0 ? d.path.join(".") : "(document)";
    const line = `${where}: ${d.message} [${String(d.code)}]`;
    if (d.severity === 0) errors.push(line);
    else if (d.severity === 1) warnings.push(line);
  }
  return { errors, warnings };
}

/** One message of the document as the generators see it. */
interface MessageEntry {
  /** Schema key such as `sse.status`, `ws.executing`, `ws.client.feature_flags`. */
  key: string;
  /** SSE event name or WebSocket message type. */
  name: string;
  kind: "sse" | "ws" | "ws.client";
  /** The payload schema as written in the document (usually a $ref). */
  payload: Json;
  /** The message's one-line summary. */
  summary: string;
}

interface LoadedSpec {
  doc: JsonObject;
  schemas: JsonObject;
  messages: MessageEntry[];
  /** Schema key -> raw schema of JSON carried inside binary frames (the type-4 metadata). */
  binaryJson: { key: string; schema: Json; summary: string }[];
  openapiNames: Set<string> | null;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Follows a local JSON pointer ref inside the AsyncAPI document. */
function deref(doc: JsonObject, node: Json): JsonObject {
  if (!isObject(node)) throw new Error(`expected an object, got ${JSON.stringify(node)}`);
  const ref = node["$ref"];
  if (typeof ref !== "string") return node;
  if (!ref.startsWith("#/")) throw new Error(`only local refs can be followed here: ${ref}`);
  let cur: Json = doc;
  for (const raw of ref.slice(2).split("/")) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(cur) || !(part in cur)) throw new Error(`unresolvable ref ${ref}`);
    cur = cur[part] as Json;
  }
  return deref(doc, cur);
}

async function loadSpec(specPath: string): Promise<LoadedSpec> {
  const doc = parseYaml(await readFile(specPath, "utf8")) as JsonObject;
  const components = isObject(doc["components"]) ? doc["components"] : {};
  const schemas = isObject(components["schemas"]) ? components["schemas"] : {};
  const messages: MessageEntry[] = [];
  const binaryJson: { key: string; schema: Json; summary: string }[] = [];
  const seen = new Set<string>();
  const operations = isObject(doc["operations"]) ? doc["operations"] : {};
  for (const opName of Object.keys(operations)) {
    const op = deref(doc, operations[opName] as Json);
    const channel = deref(doc, op["channel"] as Json);
    const servers = Array.isArray(channel["servers"]) ? channel["servers"] : [];
    const prefixes = new Set(servers.map((s) => PREFIX_BY_PROTOCOL[String(deref(doc, s)["protocol"])]));
    const [prefix] = [...prefixes];
    if (prefixes.size !== 1 || prefix === undefined) {
      throw new Error(`operation ${opName}: its channel's servers must all be http (SSE) or all ws`);
    }
    const kind = op["action"] === "send" ? `${prefix}.client` : prefix;
    if (kind !== "sse" && kind !== "ws" && kind !== "ws.client") throw new Error(`operation ${opName}: unsupported ${kind}`);
    for (const ref of Array.isArray(op["messages"]) ? op["messages"] : []) {
      const msg = deref(doc, ref);
      const name = msg["name"];
      if (typeof name !== "string") throw new Error(`operation ${opName}: a message has no name`);
      if (msg["contentType"] === "application/octet-stream") {
        // Binary frames are not JSON; only JSON embedded in them (the layout's metadata) is a schema.
        const layout = Array.isArray(msg["x-flowgate-frame-layout"]) ? msg["x-flowgate-frame-layout"] : [];
        for (const field of layout) {
          if (isObject(field) && field["field"] === "metadata" && field["schema"] !== undefined) {
            binaryJson.push({ key: `${prefix}.${BINARY_METADATA_KEY}`, schema: field["schema"], summary: `JSON metadata of a ${name} frame.` });
          }
        }
        continue;
      }
      const key = `${kind}.${name}`;
      if (seen.has(key)) throw new Error(`duplicate message key ${key}`);
      seen.add(key);
      const summary = typeof msg["summary"] === "string" ? msg["summary"] : "";
      messages.push({ key, name, kind, payload: msg["payload"] as Json, summary });
    }
  }
  let openapiNames: Set<string> | null = null;
  try {
    const openapi = parseYaml(await readFile(path.join(path.dirname(specPath), "openapi.yaml"), "utf8")) as JsonObject;
    const oc = isObject(openapi["components"]) ? openapi["components"] : {};
    openapiNames = new Set(Object.keys(isObject(oc["schemas"]) ? oc["schemas"] : {}));
  } catch {
    openapiNames = null; // openapi.yaml not written yet: refs are checked by validateAsyncApi instead
  }
  return { doc, schemas, messages, binaryJson, openapiNames };
}

// Keywords whose value is a schema, an array of schemas, or a map of schemas. Everything else is
// data (enum, const, examples...) and is copied as is, so a "$ref" inside an example stays data.
const SUBSCHEMA = new Set([
  "items",
  "additionalProperties",
  "not",
  "contains",
  "propertyNames",
  "if",
  "then",
  "else",
  "unevaluatedProperties",
  "unevaluatedItems",
  "additionalItems",
]);
const SUBSCHEMA_ARRAY = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);
const SUBSCHEMA_MAP = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);

function sortDeep(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortDeep);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const k of Object.keys(value).sort()) out[k] = sortDeep(value[k] as Json);
  return out;
}

/** Rewrites one schema for plain JSON Schema 2020-12: refs re-pointed, `x-*` extensions dropped. */
function convertSchema(node: Json, onLocal: (name: string) => void, openapiNames: Set<string> | null): Json {
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) {
    // Extensions are AsyncAPI annotations; ajv in strict mode would reject them as unknown keywords.
    if (k.startsWith("x-")) continue;
    if (k === "$ref" && typeof v === "string") {
      const oa = OPENAPI_REF.exec(v);
      const local = LOCAL_REF.exec(v);
      if (oa?.[1] !== undefined) {
        if (openapiNames !== null && !openapiNames.has(oa[1])) {
          throw new Error(`spec/openapi.yaml has no components.schemas.${oa[1]} (referenced from asyncapi.yaml)`);
        }
        out[k] = `${OPENAPI_SCHEMA_ID}#/components/schemas/${oa[1]}`;
      } else if (local?.[1] !== undefined) {
        onLocal(local[1]);
        out[k] = `#/$defs/${local[1]}`;
      } else {
        throw new Error(`unsupported $ref ${v}: use ./openapi.yaml#/components/schemas/<Name> or #/components/schemas/<Name>`);
      }
    } else if (SUBSCHEMA.has(k)) {
      out[k] = convertSchema(v as Json, onLocal, openapiNames);
    } else if (SUBSCHEMA_ARRAY.has(k) && Array.isArray(v)) {
      out[k] = v.map((s) => convertSchema(s, onLocal, openapiNames));
    } else if (SUBSCHEMA_MAP.has(k) && isObject(v)) {
      const map: JsonObject = {};
      for (const [name, s] of Object.entries(v)) map[name] = convertSchema(s as Json, onLocal, openapiNames);
      out[k] = map;
    } else {
      out[k] = structuredClone(v as Json);
    }
  }
  return out;
}

/** Builds one self-contained payload schema: the root inlined, other local schemas under $defs. */
function payloadSchema(spec: LoadedSpec, payload: Json): JsonObject {
  const pending: string[] = [];
  const defs: JsonObject = {};
  const onLocal = (name: string): void => {
    if (!(name in defs) && !pending.includes(name)) pending.push(name);
  };
  let root: Json;
  const ref = isObject(payload) ? payload["$ref"] : undefined;
  const rootLocal = typeof ref === "string" ? LOCAL_REF.exec(ref)?.[1] : undefined;
  if (rootLocal !== undefined) {
    const target = spec.schemas[rootLocal];
    if (target === undefined) throw new Error(`unresolvable ref ${String(ref)}`);
    root = convertSchema(target, onLocal, spec.openapiNames);
  } else {
    root = convertSchema(payload, onLocal, spec.openapiNames);
  }
  for (let name = pending.shift(); name !== undefined; name = pending.shift()) {
    const target = spec.schemas[name];
    if (target === undefined) throw new Error(`unresolvable ref #/components/schemas/${name}`);
    defs[name] = null; // reserve before converting, so a self-reference does not queue it again
    defs[name] = convertSchema(target, onLocal, spec.openapiNames);
  }
  const out: JsonObject = { $schema: JSON_SCHEMA_2020, ...(isObject(root) ? root : { allOf: [root] }) };
  if (Object.keys(defs).length > 0) out["$defs"] = defs;
  return sortDeep(out) as JsonObject;
}

/**
 * Every JSON message payload of the event contract as a JSON Schema 2020-12 object, keyed
 * `sse.<event>`, `ws.<type>`, `ws.client.<type>` and `ws.binary.preview_metadata` (sorted).
 * Refs into openapi.yaml become `${OPENAPI_SCHEMA_ID}#/components/schemas/<Name>`; local ones
 * point into the schema's own `$defs`. Binary frames themselves have no JSON schema.
 */
export async function asyncapiMessageSchemas(specPath: string = ASYNCAPI_PATH): Promise<Record<string, object>> {
  const spec = await loadSpec(specPath);
  const entries: [string, object][] = spec.messages.map((m) => [m.key, payloadSchema(spec, m.payload)]);
  for (const b of spec.binaryJson) entries.push([b.key, payloadSchema(spec, b.schema)]);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries);
}

// ---------------------------------------------------------------------------------------------
// TypeScript generation: a small JSON-Schema-to-TS converter covering the constructs the event
// contract uses (objects, arrays, unions of types, enum, const, oneOf/anyOf/allOf, refs).

function pascal(key: string): string {
  return key
    .split(/[._-]/)
    .filter((p) => p.length > 0)
    .map((p) => p[0]!.toUpperCase() + p.slice(1))
    .join("");
}

function docComment(text: Json | undefined, indent: string): string {
  if (typeof text !== "string" || text.trim() === "") return "";
  const lines = text
    .trim()
    .replace(/\*\//g, "*\\/")
    .split("\n")
    .map((l) => l.trimEnd());
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((l) => (l === "" ? `${indent} *` : `${indent} * ${l}`)).join("\n")}\n${indent} */\n`;
}

function propKey(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

function union(parts: string[]): string {
  const unique = [...new Set(parts)];
  if (unique.length === 0) return "never";
  return unique.join(" | ");
}

function needsParens(t: string): boolean {
  // A top-level | or & would bind wrongly next to [] or &.
  let depth = 0;
  for (const ch of t) {
    if ("{([<".includes(ch)) depth++;
    else if ("})]>".includes(ch)) depth--;
    else if (depth === 0 && (ch === "|" || ch === "&")) return true;
  }
  return false;
}

// Local component schemas, so that a property that is a bare $ref can borrow the target's description.
let localSchemas: JsonObject = {};

function describe(schema: Json): Json | undefined {
  if (!isObject(schema)) return undefined;
  if (schema["description"] !== undefined) return schema["description"];
  const local = typeof schema["$ref"] === "string" ? LOCAL_REF.exec(schema["$ref"])?.[1] : undefined;
  const target = local === undefined ? undefined : localSchemas[local];
  return isObject(target) ? target["description"] : undefined;
}

function tsType(node: Json, indent: string): string {
  if (node === true || (isObject(node) && Object.keys(node).filter((k) => !k.startsWith("x-") && k !== "description").length === 0)) {
    return "unknown";
  }
  if (node === false) return "never";
  if (!isObject(node)) throw new Error(`not a schema: ${JSON.stringify(node)}`);
  const ref = node["$ref"];
  if (typeof ref === "string") {
    const oa = OPENAPI_REF.exec(ref)?.[1];
    if (oa !== undefined) return `components["schemas"][${JSON.stringify(oa)}]`;
    const local = LOCAL_REF.exec(ref)?.[1];
    if (local !== undefined) return local;
    throw new Error(`unsupported $ref ${ref}`);
  }
  if ("const" in node) return JSON.stringify(node["const"]);
  if (Array.isArray(node["enum"])) return union(node["enum"].map((v) => JSON.stringify(v)));
  for (const k of ["oneOf", "anyOf"] as const) {
    const alts = node[k];
    if (Array.isArray(alts)) return union(alts.map((s) => tsType(s, indent)));
  }
  if (Array.isArray(node["allOf"])) {
    return node["allOf"]
      .map((s) => tsType(s, indent))
      .map((t) => (needsParens(t) ? `(${t})` : t))
      .join(" & ");
  }
  const type = node["type"];
  if (Array.isArray(type)) return union(type.map((t) => tsType({ ...node, type: t }, indent)));
  switch (type) {
    case "string":
      return "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array": {
      const item = tsType((node["items"] ?? true) as Json, indent);
      return needsParens(item) ? `Array<${item}>` : `${item}[]`;
    }
    case "object":
    case undefined:
      return objectType(node, indent);
    default:
      throw new Error(`unsupported type ${JSON.stringify(type)}`);
  }
}

function objectType(node: JsonObject, indent: string): string {
  const props = isObject(node["properties"]) ? node["properties"] : {};
  const required = new Set(Array.isArray(node["required"]) ? node["required"].map(String) : []);
  const extra = node["additionalProperties"];
  const inner = `${indent}  `;
  let body = "";
  for (const [name, schema] of Object.entries(props)) {
    body += docComment(describe(schema as Json), inner);
    body += `${inner}${propKey(name)}${required.has(name) ? "" : "?"}: ${tsType(schema as Json, inner)};\n`;
  }
  if (extra !== undefined && extra !== false) {
    // With declared properties the index signature must admit their types too, so it stays unknown.
    const valueType = extra === true || Object.keys(props).length > 0 ? "unknown" : tsType(extra, inner);
    body += docComment(isObject(extra) ? extra["description"] : undefined, inner);
    body += `${inner}[key: string]: ${valueType};\n`;
  }
  if (body === "") return extra === false ? "Record<string, never>" : "Record<string, unknown>";
  return `{\n${body}${indent}}`;
}

/** TypeScript source of generated/asyncapi-types.ts: payload types, event unions and frame constants. */
export async function generateAsyncApiTypes(specPath: string = ASYNCAPI_PATH): Promise<string> {
  const spec = await loadSpec(specPath);
  localSchemas = spec.schemas;
  const out: string[] = [];
  out.push("// Generated by npm run generate from spec/asyncapi.yaml. Do not edit.");
  out.push('import type { components } from "./openapi-types.ts";');
  out.push("");

  // Component schemas, in document order (stable for a given spec). Integer enums that name their
  // members (x-enum-varnames) become const objects so code can say BinaryFrameType.TEXT.
  for (const [name, schema] of Object.entries(spec.schemas)) {
    if (!isObject(schema)) continue;
    const names = schema["x-enum-varnames"];
    const values = schema["enum"];
    if (Array.isArray(names) && Array.isArray(values) && names.length === values.length) {
      out.push(docComment(schema["description"], "").trimEnd());
      out.push(`export const ${name} = {`);
      for (const [i, n] of names.entries()) out.push(`  ${String(n)}: ${JSON.stringify(values[i])},`);
      out.push("} as const;");
      out.push(`export type ${name} = (typeof ${name})[keyof typeof ${name}];`);
      out.push("");
      continue;
    }
    const comment = docComment(schema["description"], "").trimEnd();
    if (comment !== "") out.push(comment);
    out.push(`export type ${name} = ${tsType(schema, "")};`);
    out.push("");
  }

  // One type per payload key; it is the component itself when the names already agree.
  const keyed: { key: string; type: string }[] = [];
  const payloads = [
    ...spec.messages.map((m) => ({ key: m.key, payload: m.payload, summary: m.summary })),
    ...spec.binaryJson.map((b) => ({ key: b.key, payload: b.schema, summary: b.summary })),
  ];
  for (const { key, payload, summary } of payloads) {
    const typeName = pascal(key);
    const target = tsType(payload, "");
    if (target !== typeName) {
      out.push(`/** Payload of \`${key}\`: ${summary.replace(/\*\//g, "*\\/")} */`);
      out.push(`export type ${typeName} = ${target};`);
      out.push("");
    }
    keyed.push({ key, type: typeName });
  }

  const sse = spec.messages.filter((m) => m.kind === "sse");
  const ws = spec.messages.filter((m) => m.kind === "ws");
  const client = spec.messages.filter((m) => m.kind === "ws.client");
  out.push("/** One event of the v2 job event stream: `event` is the SSE event name, `data` the parsed JSON of its data line. */");
  out.push(`export type SseEvent =\n${sse.map((m) => `  | { event: ${JSON.stringify(m.name)}; data: ${pascal(m.key)} }`).join("\n")};`);
  out.push("");
  out.push("/** One JSON text frame the hosted WebSocket server sends, discriminated by `type`. */");
  out.push(`export type WsMessage =\n${ws.map((m) => `  | ${pascal(m.key)}`).join("\n")};`);
  out.push("");
  out.push("/** One JSON text frame a client may send on the hosted WebSocket. */");
  out.push(`export type WsClientMessage =\n${client.map((m) => `  | ${pascal(m.key)}`).join("\n")};`);
  out.push("");
  out.push("/** SSE event names of the v2 job event stream. */");
  out.push(`export const SSE_EVENT_NAMES = [${sse.map((m) => JSON.stringify(m.name)).join(", ")}] as const;`);
  out.push("");
  out.push("/** JSON message types the hosted WebSocket server sends. */");
  out.push(`export const WS_MESSAGE_TYPES = [${ws.map((m) => JSON.stringify(m.name)).join(", ")}] as const;`);
  out.push("");
  out.push("/** Payload type by schema key, as keyed by asyncapiMessageSchemas(). */");
  out.push("export interface AsyncApiPayloads {");
  for (const k of [...keyed].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
    out.push(`  ${JSON.stringify(k.key)}: ${k.type};`);
  }
  out.push("}");
  out.push("");
  return out.join("\n");
}
