// blake3 (the project's helpers, as the blob store uses them: the native binding where it loads,
// else hash-wasm; the backend is named in each figure) against Node's built-in
// sha256 over the same bytes, rounds alternating. Two paths: the whole buffer in one call, and
// 64 KiB chunks (how uploads and file streams reach the blob store's hasher).
import { createHash, randomFillSync } from "node:crypto";
import { blake3Backend, blake3Hex, createBlake3Hasher } from "../../src/domain/blake3.ts";
import type { BenchContext } from "../lib/context.ts";
import { judge, type Figure } from "../lib/report.ts";
import { median, medianRatio, nowMs } from "../lib/stats.ts";

const MiB = 1024 * 1024;
const CHUNK = 64 * 1024;

async function blake3Whole(buf: Buffer): Promise<string> {
  return blake3Hex(buf);
}

async function blake3Chunked(buf: Buffer): Promise<string> {
  const h = await createBlake3Hasher();
  for (let off = 0; off < buf.length; off += CHUNK) h.update(buf.subarray(off, off + CHUNK));
  return h.digestHex();
}

async function sha256Whole(buf: Buffer): Promise<string> {
  return createHash("sha256").update(buf).digest("hex");
}

async function sha256Chunked(buf: Buffer): Promise<string> {
  const h = createHash("sha256");
  for (let off = 0; off < buf.length; off += CHUNK) h.update(buf.subarray(off, off + CHUNK));
  return h.digest("hex");
}

/** MiB/s of one pass. */
async function speed(fn: (b: Buffer) => Promise<string>, buf: Buffer): Promise<number> {
  const t = nowMs();
  await fn(buf);
  return buf.length / MiB / ((nowMs() - t) / 1000);
}

export async function hashScenarios(ctx: BenchContext): Promise<Figure[]> {
  const { hashMiB, hashRounds } = ctx.sizes;
  const buf = Buffer.allocUnsafe(hashMiB * MiB);
  for (let off = 0; off < buf.length; off += 64 * MiB) randomFillSync(buf, off, Math.min(64 * MiB, buf.length - off));
  // Warm both (wasm instantiation, JIT) on a small slice.
  const warm = buf.subarray(0, Math.min(buf.length, 4 * MiB));
  for (const f of [blake3Whole, blake3Chunked, sha256Whole, sha256Chunked]) await f(warm);

  const figures: Figure[] = [];
  for (const [label, b3, sha] of [
    ["one call over the whole buffer", blake3Whole, sha256Whole],
    ["64 KiB chunks (the blob store's path)", blake3Chunked, sha256Chunked],
  ] as const) {
    const sB3: number[] = [];
    const sSha: number[] = [];
    for (let r = 0; r < hashRounds; r++) {
      // Alternate which goes first, so neither always runs on a warmer cache.
      if (r % 2 === 0) {
        sB3.push(await speed(b3, buf));
        sSha.push(await speed(sha, buf));
      } else {
        sSha.push(await speed(sha, buf));
        sB3.push(await speed(b3, buf));
      }
    }
    ctx.log(`hash (${label}): blake3 ${median(sB3).toFixed(0)} MiB/s, sha256 ${median(sSha).toFixed(0)} MiB/s`);
    figures.push({
      scenario: `Hashing ${hashMiB} MiB, ${label}`,
      metric: `blake3 speed (${blake3Backend})`,
      value: median(sB3),
      unit: "MiB/s",
      baseline: { name: "node:crypto sha256", value: median(sSha), unit: "MiB/s" },
      ratio: medianRatio(sB3, sSha),
      target: { on: "ratio", op: ">=", bound: 0.5 },
      rounds: sB3,
    });
  }
  return figures.map(judge);
}
