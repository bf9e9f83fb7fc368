// Checks and conversions of what callers hand to a blob store, shared by every backend.
import { parseBlake3Hash } from "../domain/blake3.ts";
import type { BlobSource, ByteRange } from "./blob-store.ts";
import { InvalidBlobKeyError } from "./errors.ts";

/** The bytes from `start` to `end` (inclusive, default the last) as a Buffer over the same memory. */
export function sliceOf(bytes: Uint8Array, start: number, end = bytes.byteLength - 1): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset + Math.min(start, bytes.byteLength), Math.max(0, Math.min(end + 1, bytes.byteLength) - start));
}

/** The hex of an expected `blake3:<hex>` hash, or null; InvalidBlobKeyError when malformed. */
export function checkExpectedHash(expectedHash: string | undefined): string | null {
  if (expectedHash === undefined) return null;
  const hex = parseBlake3Hash(expectedHash);
  if (hex === null) throw new InvalidBlobKeyError();
  return hex;
}

/** A put's size bound, or null; RangeError when not a non-negative integer. */
export function checkMaxBytes(maxBytes: number | undefined): number | null {
  if (maxBytes === undefined) return null;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new RangeError("maxBytes must be a non-negative integer");
  return maxBytes;
}

/** A byte range's bounds; RangeError when they are not non-negative integers in order. */
export function checkRange(range: ByteRange): { start: number | undefined; end: number | undefined } {
  const { start, end } = range;
  for (const bound of [start, end]) {
    if (bound !== undefined && (!Number.isSafeInteger(bound) || bound < 0)) {
      throw new RangeError("range bounds must be non-negative integers");
    }
  }
  if (start !== undefined && end !== undefined && end < start) throw new RangeError("range end precedes start");
  return { start, end };
}

/** The chunks of a source as bytes (strings as UTF-8). */
export async function* chunksOf(source: BlobSource): AsyncGenerator<Uint8Array> {
  if (source instanceof Uint8Array) {
    yield source;
    return;
  }
  for await (const chunk of source as AsyncIterable<Uint8Array | string>) {
    yield typeof chunk === "string" ? Buffer.from(chunk) : chunk;
  }
}
