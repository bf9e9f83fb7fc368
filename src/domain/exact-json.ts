// JSON whose integers stay exact through every layer: an integer literal beyond 2^53 parses to a
// JSON.rawJSON value, which JSON.stringify writes back as the same digits (stored, returned, sent
// to ComfyUI). Everything else is what JSON.parse gives. Only text holding a run of 16 digits
// (every such integer has one) takes the slower reviver path; the common body parses at full speed.

/** A JSON.rawJSON value: its text is written as is by JSON.stringify. */
export interface RawJson {
  readonly rawJSON: string;
}

declare global {
  interface JSON {
    rawJSON(text: string): RawJson;
    isRawJSON(value: unknown): value is RawJson;
  }
}

const LONG_DIGITS = /\d{16}/;
const INTEGER = /^-?\d+$/;

/** JSON.parse, integers beyond 2^53 kept exact (as `exactInteger` values). Throws as JSON.parse does. */
export function parseJson(text: string): unknown {
  return LONG_DIGITS.test(text) ? JSON.parse(text, reviveExact) : JSON.parse(text);
}

function reviveExact(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value === "number" && !Number.isSafeInteger(value) && context?.source !== undefined && INTEGER.test(context.source))
    return JSON.rawJSON(context.source);
  return value;
}

/** An integer as exact JSON: a number when it is safe, a raw JSON integer otherwise. */
export function exactInteger(n: bigint): number | RawJson {
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : JSON.rawJSON(n.toString());
}

/** Whether a value is an exact integer beyond 2^53 (from `parseJson` or `exactInteger`). */
export function isBigInteger(value: unknown): value is RawJson {
  return JSON.isRawJSON(value) && INTEGER.test(value.rawJSON);
}

/** The bigint of an integer, exact or a safe number; null for anything else. */
export function bigIntOf(value: unknown): bigint | null {
  if (isBigInteger(value)) return BigInt(value.rawJSON);
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
  return null;
}

/** A deep copy of parsed JSON (structuredClone refuses raw JSON values; they are immutable and shared). */
export function cloneJson<T>(value: T): T {
  if (typeof value !== "object" || value === null || JSON.isRawJSON(value)) return value;
  if (Array.isArray(value)) return value.map(cloneJson) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === "__proto__") Object.defineProperty(out, k, { value: cloneJson(v), enumerable: true, writable: true, configurable: true });
    else out[k] = cloneJson(v);
  }
  return out as T;
}
