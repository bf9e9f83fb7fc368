// Malformed requests derived from the spec, for every operation that takes input: bodies that are
// not JSON or not objects, each required field missing, each field with a wrong type, an unknown
// field, an oversized body, and path or query parameters the schema refuses. Every derived body is
// checked against the generated request validator first, so a case is only sent if it really is
// invalid.
import { routes, type RouteSpec } from "../../../generated/routes.ts";
import { validator } from "../../machinery/contract.ts";
import { deref as derefIn, openapiDoc } from "../../machinery/spec-files.ts";

type Schema = Record<string, unknown>;

/** One malformed request. */
export interface NegativeCase {
  name: string;
  method: string;
  /** Path with parameters filled in, relative to the base URL. */
  path: string;
  body?: string | Uint8Array;
  contentType?: string;
  /** Statuses accepted besides 4xx (e.g. 200 where the seed lets a server ignore the input). */
  alsoOk?: number[];
  /** The oversized-body case (a server may also close the connection). */
  oversized?: boolean;
}

const spec = openapiDoc;
const deref = (s: unknown): Schema => derefIn(spec(), s);

/** The JSON request schema of an operation, or undefined. */
function requestSchema(route: RouteSpec): Schema | undefined {
  const op = ((spec().paths as Schema)[route.path] as Schema)[route.method.toLowerCase()] as Schema;
  const body = deref(op.requestBody);
  const json = ((body.content as Schema | undefined)?.["application/json"] as Schema | undefined)?.schema;
  return json ? deref(json) : undefined;
}

const SAMPLES: Record<string, [unknown]> = {
  object: [{}],
  array: [[]],
  string: ["conformance"],
  integer: [7],
  number: [1.5],
  boolean: [true],
  null: [null],
};

/** Values of every JSON type the schema does not allow, by type name. */
function wrongTypes(s: Schema): Array<[string, unknown]> {
  const raw = s.type ?? (s.const !== undefined ? typeof s.const : undefined);
  if (!raw) return [];
  const allowed = new Set(Array.isArray(raw) ? (raw as string[]) : [raw as string]);
  if (allowed.has("number")) allowed.add("integer");
  return Object.entries(SAMPLES)
    .filter(([t]) => !allowed.has(t))
    .map(([t, v]) => [t, v[0]]);
}

/** A body the operation accepts, to mutate into invalid ones. */
function validBody(route: RouteSpec): Record<string, unknown> {
  switch (route.operationId) {
    case "createJob":
      return { workflow: { "1": { class_type: "PrimitiveString", inputs: { value: "x" } }, "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } } };
    case "createAssetFromHash":
      return { hash: `blake3:${"0".repeat(64)}` };
    case "hostedQueuePrompt":
      return { prompt: { "1": { class_type: "PrimitiveString", inputs: { value: "x" } } } };
    default:
      return {};
  }
}

function bodyCases(route: RouteSpec, path: string, oversizeBytes: number): NegativeCase[] {
  const schema = requestSchema(route);
  if (!schema) return [];
  const fn = route.requestBody?.validator ? validator(route.requestBody.validator) : undefined;
  const valid = validBody(route);
  const m = route.method;
  // The seed leaves the payload of a cancel or an interrupt open: a server may ignore it (200).
  const alsoOk = route.operationId === "cancelJob" || route.operationId === "hostedInterrupt" ? [200] : undefined;
  const cases: NegativeCase[] = [
    { name: "malformed JSON", method: m, path, body: `${JSON.stringify(valid).slice(0, -1)},"`, contentType: "application/json", alsoOk },
    { name: "a JSON array body", method: m, path, body: "[]", contentType: "application/json", alsoOk },
    { name: "a JSON string body", method: m, path, body: '"conformance"', contentType: "application/json", alsoOk },
  ];
  const props = (schema.properties ?? {}) as Record<string, Schema>;
  const candidates: Array<[string, unknown]> = [];
  for (const req of (schema.required ?? []) as string[]) {
    const { [req]: _, ...rest } = valid;
    candidates.push([`missing required ${req}`, rest]);
  }
  // The hosted interface ignores some fields it accepts, so only its required fields are mutated.
  const required = new Set((schema.required ?? []) as string[]);
  for (const [name, raw] of Object.entries(props)) {
    if (route.family === "hosted" && !required.has(name)) continue;
    const p = deref(raw);
    if (p.not && Object.keys(p.not as object).length === 0) {
      candidates.push([`reserved field ${name}`, { ...valid, [name]: "https://example.invalid/hook" }]);
      continue;
    }
    for (const [type, w] of wrongTypes(p)) candidates.push([`${name} as ${type}`, { ...valid, [name]: w }]);
    if (p.additionalProperties === false) candidates.push([`an unknown key inside ${name}`, { ...valid, [name]: { conformance_unknown: "x" } }]);
  }
  if (schema.additionalProperties === false && route.family === "v2") candidates.push(["an unknown field", { ...valid, conformance_unknown: "x" }]);
  for (const [name, body] of candidates) {
    // Only bodies the spec itself refuses are negative cases.
    if (fn?.(body)) continue;
    cases.push({ name, method: m, path, body: JSON.stringify(body), contentType: "application/json", alsoOk });
  }
  const size = oversizeBytes >= 1 << 20 ? `${(oversizeBytes / (1 << 20)).toFixed(0)} MiB` : `${oversizeBytes} bytes`;
  if (oversizeBytes > 0)
    cases.push({
      name: `an oversized body (${size})`,
      method: m,
      path,
      body: oversized(valid, oversizeBytes),
      contentType: "application/json",
      alsoOk,
      oversized: true,
    });
  return cases;
}

function oversized(valid: Record<string, unknown>, bytes: number): Uint8Array {
  const head = new TextEncoder().encode(`${JSON.stringify(valid).slice(0, -1)}${Object.keys(valid).length ? "," : ""}"conformance_pad":"`);
  const out = new Uint8Array(Math.max(bytes, head.byteLength + 2));
  out.fill(0x78);
  out.set(head, 0);
  out.set(new TextEncoder().encode('"}'), out.byteLength - 2);
  return out;
}

const BAD_IDS = ["not-a-uuid", "x".repeat(300), "%2e%2e", "%00", "'%20OR%201%3D1--", "%F0%9F%92%A5"];
// Operations whose unknown ids are answered 200 (an empty object; cancelled false), as in ComfyUI.
const UNKNOWN_IS_OK = new Set(["hostedGetNodeInfo", "hostedGetHistoryEntry", "hostedCancelJob"]);

function pathCases(route: RouteSpec): NegativeCase[] {
  const params = [...route.path.matchAll(/\{([^}]+)\}/g)].map((x) => x[1]!);
  if (params.length === 0 || UNKNOWN_IS_OK.has(route.operationId) || route.websocket) return [];
  return BAD_IDS.map((bad) => ({ name: `path parameter ${params[0]}=${bad.slice(0, 20)}`, method: route.method, path: route.path.replace(/\{[^}]+\}/g, bad) }));
}

const QUERY_CASES: Record<string, string[]> = {
  listJobs: ["limit=0", "limit=101", "limit=abc", "status=conformance_bogus"],
  hostedView: ["subfolder=", "filename=", "filename=x&type=conformance_bogus"],
  hostedGetHistory: ["max_items=0", "max_items=abc"],
};

function multipartCases(route: RouteSpec, path: string): NegativeCase[] {
  if (!route.requestBody?.contentTypes.includes("multipart/form-data")) return [];
  const boundary = "conformance-boundary";
  const empty = `--${boundary}\r\nContent-Disposition: form-data; name="type"\r\n\r\ninput\r\n--${boundary}--\r\n`;
  return [
    { name: "no body", method: route.method, path },
    { name: "JSON instead of multipart", method: route.method, path, body: "{}", contentType: "application/json" },
    { name: "multipart without the file", method: route.method, path, body: empty, contentType: `multipart/form-data; boundary=${boundary}` },
    { name: "a truncated multipart body", method: route.method, path, body: empty.slice(0, 40), contentType: `multipart/form-data; boundary=${boundary}` },
  ];
}

/** Every negative case of one operation; oversizeBytes 0 leaves out the oversized body. */
export function negativeCases(route: RouteSpec, oversizeBytes = 0): NegativeCase[] {
  const fixed = route.path.replace(/\{[^}]+\}/g, "0192f4a8-6c1e-7b3a-9f21-000000000000");
  return [
    ...bodyCases(route, fixed, oversizeBytes),
    ...multipartCases(route, fixed),
    ...pathCases(route),
    ...(QUERY_CASES[route.operationId] ?? []).map((q) => ({ name: `query ${q}`, method: route.method, path: `${fixed}?${q}` })),
  ];
}

/** Operations that take input, by family. */
export function operationsWithInput(family: "v2" | "hosted"): RouteSpec[] {
  return routes.filter((r) => r.family === family && !r.websocket && negativeCases(r).length > 0);
}
