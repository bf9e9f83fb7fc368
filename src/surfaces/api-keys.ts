// API keys: random, shown once, stored only as a SHA-256 digest.
import { createHash, randomBytes } from "node:crypto";

const KEY_PREFIX = "fg_";

/** A new API key (`fg_` and 43 base64url characters). */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString("base64url");
}

/** The digest a key is stored and looked up by. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** The part of a key safe to show in listings. */
export function keyPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + 6);
}
