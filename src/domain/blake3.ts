// blake3 helpers shared by the blob store, the server and the clients. Hashing runs in the
// native binding of @napi-rs/blake-hash (SIMD, about 4x Node's sha256 on x86-64) where its
// prebuilt binary for the platform is installed (an optional dependency: x86-64 Linux, glibc or
// musl), and in hash-wasm's portable WebAssembly everywhere else.
import { createRequire } from "node:module";
import { blake3 as wasmBlake3, createBLAKE3 } from "hash-wasm";

interface NativeBlake3 {
  blake3(input: Uint8Array | string): Buffer;
  Blake3Hasher: new () => { update(input: Uint8Array): unknown; digest(format: "hex"): string };
}

/** Prebuilt bindings by platform and architecture, tried in order. */
const NATIVE_PACKAGES: Record<string, string[]> = {
  "linux-x64": ["@napi-rs/blake-hash-linux-x64-gnu", "@napi-rs/blake-hash-linux-x64-musl"],
};

/** The native binding, or null when none loads here (FLOWGATE_BLAKE3=wasm forces null). */
const native: NativeBlake3 | null = loadNative();

function loadNative(): NativeBlake3 | null {
  if (process.env.FLOWGATE_BLAKE3 === "wasm") return null;
  const require = createRequire(import.meta.url);
  for (const name of NATIVE_PACKAGES[`${process.platform}-${process.arch}`] ?? []) {
    try {
      return require(name) as NativeBlake3;
    } catch {
      // Not installed for this platform, or built for another libc: try the next.
    }
  }
  return null;
}

/** Which implementation hashes in this process: "native" or "wasm". */
export const blake3Backend: "native" | "wasm" = native === null ? "wasm" : "native";

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
export async function blake3Hex(data: Uint8Array | string): Promise<string> {
  return native === null ? wasmBlake3(data) : native.blake3(data).toString("hex");
}

/** A streaming blake3-256 hasher: `update` chunks in order, then `digestHex` once. */
export interface Blake3Hasher {
  update(chunk: Uint8Array): void;
  digestHex(): string;
}

/** Creates a streaming hasher (one native or wasm instance per hasher, so hashers never share state). */
export async function createBlake3Hasher(): Promise<Blake3Hasher> {
  if (native !== null) {
    const hasher = new native.Blake3Hasher();
    return {
      update(chunk) {
        hasher.update(chunk);
      },
      digestHex() {
        return hasher.digest("hex");
      },
    };
  }
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
