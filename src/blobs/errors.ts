// Typed failures of the blob store, so the HTTP layer maps them without parsing messages.
// (Plain fields rather than constructor parameter properties: the code stays runnable with
// Node's built-in type stripping.)
import { DependencyUnavailableError } from "../domain/network-errors.ts";

/** The bytes did not hash to the expected value; nothing was stored. */
export class HashMismatchError extends Error {
  override readonly name = "HashMismatchError";
  readonly expected: string;
  readonly actual: string;
  constructor(expected: string, actual: string) {
    super(`content hash mismatch: expected ${expected}, got ${actual}`);
    this.expected = expected;
    this.actual = actual;
  }
}

/** The stream was longer than the allowed maximum; nothing was stored. */
export class PayloadTooLargeError extends Error {
  override readonly name = "PayloadTooLargeError";
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`payload exceeds ${maxBytes} bytes`);
    this.maxBytes = maxBytes;
  }
}

/** A blob key or hash that is not a lowercase 64-hex blake3 digest; no path was built from it. */
export class InvalidBlobKeyError extends Error {
  override readonly name = "InvalidBlobKeyError";
  constructor() {
    super("invalid blob key: expected 64 lowercase hex characters");
  }
}

/** No blob is stored under the key. */
export class BlobNotFoundError extends Error {
  override readonly name = "BlobNotFoundError";
  readonly key: string;
  constructor(key: string) {
    super(`blob not found: ${key}`);
    this.key = key;
  }
}

/** The blob store did not answer, or not within its bound: retrying later may succeed. */
export class BlobUnavailableError extends DependencyUnavailableError {
  override readonly name = "BlobUnavailableError";
}

/** A configured feature needs an optional package that is not installed; the message says what to install. */
export class MissingPackageError extends Error {
  override readonly name = "MissingPackageError";
  readonly packages: string[];
  constructor(feature: string, packages: string[]) {
    super(`${feature} needs ${packages.join(" and ")}, not installed: npm install ${packages.join(" ")}`);
    this.packages = packages;
  }
}
