// blake3 helpers shared by the blob store, the server and the clients.
import { blake3, createBLAKE3 } from "hash-wasm";

/** The prefix of a content hash as it appears on the wire: `blake3:<hex>`. */
export const BLAKE3_PREFIX = "blake3:";

const HEX_DIGEST = /^[0-9a-f]{64}$/;

/** True when `value` is a lowercase 64-character hex blake3 digest (a blob key). */
export function isBlake3Hex(value: unknown): value is string {
  return typeof value === "string" && HEX_DIGEST.test(value);
}

/** Formats a hex digest as a wire hash: `blake3:<hex>`. */
export function toBlake3Hash(hex: string): string {
  return BLAKE3_PREFIX + hex;
}

/** Returns the hex digest of a `blake3:<hex>` hash, or null when the string is not one (hex is case-insensitive). */
export function parseBlake3Hash(hash: unknown): string | null {
  if (typeof hash !== "string" || !hash.startsWith(BLAKE3_PREFIX)) return null;
  const hex = hash.slice(BLAKE3_PREFIX.length).toLowerCase();
  return HEX_DIGEST.test(hex) ? hex : null;
}

/** blake3-256 of the given bytes (or UTF-8 text) as lowercase hex. */
export function blake3Hex(data: Uint8Array | string): Promise<string> {
  return blake3(data);
}

/** A streaming blake3-256 hasher: `update` chunks in order, then `digestHex` once. */
export interface Blake3Hasher {
  update(chunk: Uint8Array): void;
  digestHex(): string;
}

/** Creates a streaming hasher (one wasm instance per hasher, so hashers never share state). */
export async function createBlake3Hasher(): Promise<Blake3Hasher> {
  const hasher = await createBLAKE3(256);
  hasher.init();
  return {
    update(chunk) {
      hasher.update(chunk);
    },
    digestHex() {
      return hasher.digest("hex");
    },
  };
}

/** blake3 hex of a whole stream, read chunk by chunk and never buffered whole. */
export async function blake3HexOfStream(source: AsyncIterable<Uint8Array>): Promise<string> {
  const hasher = await createBlake3Hasher();
  for await (const chunk of source) hasher.update(chunk);
  return hasher.digestHex();
}
