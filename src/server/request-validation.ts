// Validation of requests with the generated ajv validators, reported as `invalid_request`
// with one `{field, reason}` per problem.
import type { ErrorObject, ValidateFunction } from "ajv";
import { invalidRequest } from "./error-envelope.ts";
import { ServiceError } from "../domain/errors.ts";
import type { ErrorCode } from "../domain/errors.ts";

/** Field path of an ajv error: `workflow`, `extra_data.foo`, `limit`... */
function fieldOf(e: ErrorObject, root: string): string {
  const parts = e.instancePath
    .split("/")
    .filter(Boolean)
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  const params = e.params as Record<string, unknown>;
  if (e.keyword === "required") parts.push(String(params.missingProperty));
  if (e.keyword === "additionalProperties") parts.push(String(params.additionalProperty));
  const path = parts.join(".");
  return root && path ? `${root}.${path}` : root || path;
}

/** Stable snake_case reason of a schema keyword that failed (ajv's, or Prism's which are ajv's); reserved fields fail `not`. */
export function reasonOfKeyword(keyword: string): string {
  switch (keyword) {
    case "required":
      return "missing";
    case "additionalProperties":
      return "unknown_field";
    case "not":
      return "reserved";
    case "type":
      return "wrong_type";
    case "enum":
    case "const":
      return "not_in_options";
    case "minimum":
    case "maximum":
    case "minLength":
    case "maxLength":
    case "minItems":
    case "maxItems":
      return "out_of_range";
    default:
      return "invalid_format";
  }
}

/**
 * A top-level field whose failures carry their own code rather than `invalid_request` (the
 * labels: `metadata_invalid` in a submission, `invalid_metadata_filter` in a listing's query).
 */
export interface OwnCodeField {
  field: string;
  code: ErrorCode;
  message: string;
}

/** The label key an error is about: the property name a `propertyNames` rule refused, or the key of a bad value. */
function keyOf(e: ErrorObject, field: string): string | null {
  const named = (e as ErrorObject & { propertyName?: string }).propertyName ?? (e.params as { propertyName?: string }).propertyName;
  if (typeof named === "string") return named;
  const parts = e.instancePath.split("/").filter(Boolean);
  return parts.length >= 2 && parts[0] === field ? parts[1]!.replace(/~1/g, "/").replace(/~0/g, "~") : null;
}

/**
 * Throws `invalid_request` when `value` fails `validate`; `root` prefixes field names (path, query).
 * When every failure is within `own.field`, throws `own.code` with the offending key in `details.key`.
 */
export function assertValid(validate: ValidateFunction, value: unknown, root = "", own?: OwnCodeField): void {
  if (validate(value)) return;
  const seen = new Set<string>();
  const fields: Array<{ field: string; reason: string }> = [];
  const errors = (validate.errors ?? []).filter((e) => e.keyword !== "oneOf" && e.keyword !== "anyOf" && e.keyword !== "if");
  if (own && errors.length > 0 && errors.every((e) => e.instancePath === `/${own.field}` || e.instancePath.startsWith(`/${own.field}/`))) {
    const specific = errors.find((e) => e.keyword !== "propertyNames") ?? errors[0]!;
    const key = keyOf(specific, own.field);
    const reason = specific.keyword === "maxProperties" ? "too_many" : reasonOfKeyword(specific.keyword);
    throw new ServiceError(own.code, own.message, { key, fields: [{ field: key === null ? own.field : `${own.field}.${key}`, reason }] });
  }
  for (const e of errors) {
    const field = fieldOf(e, root);
    const reason = reasonOfKeyword(e.keyword);
    const key = `${field}:${reason}`;
    if (!seen.has(key)) {
      seen.add(key);
      fields.push({ field, reason });
    }
  }
  throw invalidRequest(fields.length > 0 ? fields : [{ field: root, reason: "invalid" }]);
}

/** Deepest nesting of arrays and objects a JSON body may have (a workflow value sits at depth 4). */
export const MAX_BODY_DEPTH = 64;

/**
 * Throws `invalid_request` (reason `too_deep`) when `value` nests arrays or objects deeper than
 * `max`: everything after validation (the store's serialization, cache keys, views) may recurse
 * over a body, so its depth is bounded here, without recursion.
 */
export function assertShallow(value: unknown, max = MAX_BODY_DEPTH): void {
  const stack: Array<{ value: object; depth: number; path: string }> = [];
  if (value !== null && typeof value === "object") stack.push({ value, depth: 0, path: "" });
  while (stack.length > 0) {
    const { value: v, depth, path } = stack.pop()!;
    if (depth >= max) throw invalidRequest([{ field: path, reason: "too_deep" }]);
    for (const k in v) {
      const x = (v as Record<string, unknown>)[k];
      // The field names the first levels only (`workflow.<node>.inputs.<name>`).
      if (x !== null && typeof x === "object") stack.push({ value: x, depth: depth + 1, path: depth < 4 ? (path ? `${path}.${k}` : k) : path });
    }
  }
}
