// Approximate memory held by a node result, to weigh cache entries.

const OVERHEAD = 64;

/** Bytes a value holds: typed arrays and buffers by length, strings at two bytes a character. */
export function estimateBytes(value: unknown, seen: Set<object> = new Set()): number {
  if (value === null || value === undefined || typeof value === "boolean" || typeof value === "number") return 8;
  if (typeof value === "string") return OVERHEAD + value.length * 2;
  if (typeof value === "bigint") return 16;
  if (typeof value !== "object") return OVERHEAD;
  if (seen.has(value)) return 0;
  seen.add(value);
  if (ArrayBuffer.isView(value)) return OVERHEAD + value.byteLength;
  if (value instanceof ArrayBuffer) return OVERHEAD + value.byteLength;
  let total = OVERHEAD;
  if (Array.isArray(value)) for (const v of value) total += estimateBytes(v, seen);
  else for (const [k, v] of Object.entries(value)) total += k.length * 2 + estimateBytes(v, seen);
  return total;
}
