// What `npm run mock` answers in place of Prism's errors: the contract's envelope with a code its
// status has. Prism answers a request the spec forbids with 422 and whatever example comes first
// (a `not_found` body, say), and its own errors (no route, no credentials) as problem+json;
// flowgate answers the first with 400 `invalid_request` and `details.fields`, and every error
// with `{error: {code, message}}` and one of the codes the spec gives that status.
import type { Json, JsonObject } from "../generators/spec-files.ts";
import { reasonOfKeyword } from "../src/server/request-validation.ts";

/** One of Prism's validation findings (its `sl-violations` header). */
export interface Violation {
  location: string[];
  code: string | number;
  message: string;
}

/** The spec's error codes per operation and status: method, path template, status to codes. */
export interface ErrorTable {
  routes: Array<{ method: string; pattern: RegExp; byStatus: Map<number, { codes: string[]; examples: JsonObject[] }> }>;
  /** Every status's codes across the spec, for requests no operation matches. */
  anyRoute: Map<number, string[]>;
}

function resolve(spec: JsonObject, node: Json | undefined): JsonObject | undefined {
  let n = node as JsonObject | undefined;
  for (let i = 0; n && typeof n.$ref === "string" && i < 10; i++) {
    n = (n.$ref as string)
      .replace(/^#\//, "")
      .split("/")
      .reduce<Json | undefined>((at, key) => (at as JsonObject | undefined)?.[key], spec) as JsonObject | undefined;
  }
  return n;
}

/** Reads the error codes and examples of every error response in the spec. */
export function errorTable(spec: JsonObject): ErrorTable {
  const table: ErrorTable = { routes: [], anyRoute: new Map() };
  for (const [path, item] of Object.entries(spec.paths as JsonObject)) {
    const pattern = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`);
    for (const [method, op] of Object.entries(item as JsonObject)) {
      const responses = (op as JsonObject)?.responses as JsonObject | undefined;
      if (!responses) continue;
      const byStatus = new Map<number, { codes: string[]; examples: JsonObject[] }>();
      for (const [status, ref] of Object.entries(responses)) {
        const response = resolve(spec, ref);
        const codes = response?.["x-error-codes"] as string[] | undefined;
        if (!codes || !/^\d+$/.test(status)) continue;
        const media = ((response!.content as JsonObject | undefined)?.["application/json"] ?? {}) as JsonObject;
        const examples = [media.example, ...Object.values((media.examples as JsonObject | undefined) ?? {}).map((e) => resolve(spec, e)?.value)].filter(
          (e): e is JsonObject => typeof e === "object" && e !== null && codes.includes(((e as JsonObject).error as JsonObject | undefined)?.code as string),
        );
        byStatus.set(Number(status), { codes, examples });
        const known = table.anyRoute.get(Number(status)) ?? [];
        table.anyRoute.set(Number(status), [...known, ...codes.filter((c) => !known.includes(c))]);
      }
      table.routes.push({ method: method.toUpperCase(), pattern, byStatus });
    }
  }
  return table;
}

/** The field a finding is about: the path below body, query, path or header, dotted; a missing or unknown property by its name. */
function fieldOf(v: Violation): string {
  const below = v.location.slice(2);
  const named = /property '([^']+)'/.exec(v.message)?.[1];
  return [...below, ...(named && (v.code === "required" || v.code === "additionalProperties") ? [named] : [])].join(".");
}

/** The body of a request the spec forbids: 400 `invalid_request` with one field per finding. */
export function invalidRequestBody(violations: Violation[]): JsonObject {
  const fields = violations.filter((v) => v.location[0] === "request").map((v) => ({ field: fieldOf(v), reason: reasonOfKeyword(String(v.code)) }));
  return {
    error: {
      code: "invalid_request",
      message: "The request is invalid.",
      details: { fields: fields.length > 0 ? fields : [{ field: "", reason: "invalid" }] },
    },
  };
}

/**
 * The status and body to answer in place of an error of Prism's, or null to pass it on as it is:
 * it is already an envelope with a code of its status.
 */
export function fixError(
  table: ErrorTable,
  method: string,
  path: string,
  status: number,
  body: unknown,
  violations: Violation[],
): { status: number; body: JsonObject } | null {
  if (violations.some((v) => v.location[0] === "request")) return { status: 400, body: invalidRequestBody(violations) };
  const route = table.routes.find((r) => r.method === method && r.pattern.test(path));
  const declared = route?.byStatus.get(status);
  const codes = declared?.codes ?? table.anyRoute.get(status) ?? [];
  const code = ((body as JsonObject | null)?.error as JsonObject | undefined)?.code;
  if (typeof code === "string" && codes.includes(code)) return null;
  if (codes.length === 0) return null; // a status the spec gives no error code (Prism's 405, say)
  const example = declared?.examples[0];
  if (example) return { status, body: example };
  return { status, body: { error: { code: codes[0]!, message: `The mock answers ${status} here.` } } };
}
