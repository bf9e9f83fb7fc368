// Expiring links that carry their own authorization: an HMAC-SHA256 over the path and the
// expiry, so a link cannot be moved to another path nor extended.
import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from "node:crypto";
import { chmod, link, mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Result of UrlSigner.verify. */
export type SignatureCheck = "ok" | "expired" | "invalid";

/** A signed link: `url` is the path plus its query; `expires_at` is the exact expiry in epoch ms. */
export interface SignedUrl {
  url: string;
  query: string;
  expires_at: number;
}

/** Query parameters as a raw string (with or without `?`), URLSearchParams, or a parsed object. */
export type QueryInput = string | URLSearchParams | Record<string, unknown>;

/** File (under the data dir) that keeps the generated signing key. */
export const SIGNING_KEY_FILE = "url-signing.key";

const MIN_KEY_BYTES = 16;
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/; // 32 bytes in unpadded base64url
const EXPIRES = /^\d{1,12}$/;
// Domain separation: a MAC made for another purpose with the same key never verifies here.
const MAC_CONTEXT = "flowgate-signed-url-v1";

/** Signs and verifies expiring URLs with one secret key. */
export class UrlSigner {
  /** A KeyObject, not a Buffer: createHmac re-imports a Buffer key on every call (~5x the cost of the MAC). */
  readonly #key: KeyObject;

  /** `key`: at least 16 bytes; a string is taken as its UTF-8 bytes. */
  constructor(key: Buffer | string) {
    const bytes = typeof key === "string" ? Buffer.from(key, "utf8") : Buffer.from(key);
    if (bytes.length < MIN_KEY_BYTES) throw new RangeError(`URL signing key must be at least ${MIN_KEY_BYTES} bytes`);
    this.#key = createSecretKey(bytes);
  }

  /**
   * Signs `path` (exactly as the server will see it: raw, percent-encoded, no query) until
   * `expiresAtMs`, rounded down to the second.
   */
  sign(path: string, expiresAtMs: number): SignedUrl {
    checkPath(path);
    if (!Number.isFinite(expiresAtMs) || expiresAtMs < 0) throw new RangeError("expiresAtMs must be a non-negative epoch time");
    const expires = String(Math.floor(expiresAtMs / 1000));
    const query = `expires=${expires}&signature=${this.#mac(path, expires).toString("base64url")}`;
    return { url: `${path}?${query}`, query, expires_at: Number(expires) * 1000 };
  }

  /** "ok" for a genuine unexpired link, "expired" for a genuine expired one, "invalid" otherwise. */
  verify(path: string, query: QueryInput, nowMs: number): SignatureCheck {
    if (typeof path !== "string" || /[?#]/.test(path)) return "invalid";
    const params = readParams(query);
    if (params === null) return "invalid";
    const { expires, signature } = params;
    if (!EXPIRES.test(expires) || !SIGNATURE.test(signature)) return "invalid";
    const given = Buffer.from(signature, "base64url");
    const expected = this.#mac(path, expires);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "invalid";
    return nowMs < Number(expires) * 1000 ? "ok" : "expired";
  }

  #mac(path: string, expires: string): Buffer {
    return createHmac("sha256", this.#key).update(`${MAC_CONTEXT}\n${expires}\n${path}`).digest();
  }
}

/**
 * Returns the data dir's URL signing key, generating 32 random bytes into a 0600 file the
 * first time; concurrent first calls (several processes) all end with the same key.
 */
export async function loadOrCreateSigningKey(dataDir: string): Promise<Buffer> {
  await mkdir(dataDir, { recursive: true });
  const path = join(dataDir, SIGNING_KEY_FILE);
  const existing = await readKeyFile(path);
  if (existing !== null) return existing;

  // Write a complete file under a private name, then link it into place: readers never see
  // a partial key, and link fails with EEXIST when another process won the race.
  const tempPath = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    // The umask can only narrow 0600, never widen it.
    await writeFile(tempPath, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
    await link(tempPath, path).catch((error: unknown) => {
      if ((error as { code?: unknown }).code !== "EEXIST") throw error;
    });
  } finally {
    await rm(tempPath, { force: true });
  }
  const key = await readKeyFile(path);
  if (key === null) throw new Error(`could not create ${path}`);
  return key;
}

async function readKeyFile(path: string): Promise<Buffer | null> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return null;
    throw error;
  }
  const hex = text.trim();
  // A damaged key file is an operator problem; replacing it silently would void every issued link.
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`${path} does not hold a 64-hex-digit key`);
  // Tighten a key file whose permissions were loosened by hand (or by a copy).
  if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600);
  return Buffer.from(hex, "hex");
}

function checkPath(path: string): void {
  if (typeof path !== "string" || !path.startsWith("/") || /[?#\s]/.test(path)) {
    throw new TypeError("path must start with / and carry no query, fragment or whitespace");
  }
}

/** The single `expires` and `signature` values, or null when either is missing or repeated. */
function readParams(query: QueryInput): { expires: string; signature: string } | null {
  if (typeof query === "string" || query instanceof URLSearchParams) {
    const params = typeof query === "string" ? new URLSearchParams(query.startsWith("?") ? query.slice(1) : query) : query;
    const expires = params.getAll("expires");
    const signature = params.getAll("signature");
    if (expires.length !== 1 || signature.length !== 1) return null;
    return { expires: expires[0]!, signature: signature[0]! };
  }
  const { expires, signature } = query;
  if (typeof expires !== "string" || typeof signature !== "string") return null;
  return { expires, signature };
}
