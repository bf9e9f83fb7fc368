// Time-ordered UUIDs (version 7): index friendly and sortable by creation.
import { randomFillSync } from "node:crypto";

// One call into the CSPRNG per 256 ids instead of one per id (it was 7 % of a submission's CPU).
const POOL_IDS = 256;
const pool = Buffer.alloc(16 * POOL_IDS);
let next = POOL_IDS;

/** A new UUIDv7 string for `now` (epoch ms). */
export function uuidv7(now: number = Date.now()): string {
  if (next === POOL_IDS) {
    randomFillSync(pool);
    next = 0;
  }
  const b = pool.subarray(16 * next, 16 * ++next); // used up here, overwritten only by the next refill
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a string is a UUID in canonical lowercase form, the only spelling ComfyUI takes as a client's prompt id. */
export function isCanonicalUuid(value: unknown): value is string {
  return isUuid(value) && value === value.toLowerCase();
}

/** Whether a string is a UUID in canonical form. */
export function isUuid(value: unknown): value is string {
  return typeof value === "string" && UUID_RE.test(value);
}
