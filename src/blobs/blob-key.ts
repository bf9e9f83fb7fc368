// Blob keys name files on disk, so every path is built from a checked key only.
import { join } from "node:path";
import { isBlake3Hex } from "../domain/blake3.ts";
import { InvalidBlobKeyError } from "./errors.ts";

/** Throws InvalidBlobKeyError unless `key` is a lowercase 64-hex blake3 digest. */
export function assertBlobKey(key: unknown): asserts key is string {
  if (!isBlake3Hex(key)) throw new InvalidBlobKeyError();
}

/** The file of a blob under `root`, fanned out two levels (`ab/cd/abcd...`) to keep directories small. */
export function blobPath(root: string, key: string): string {
  assertBlobKey(key);
  return join(root, key.slice(0, 2), key.slice(2, 4), key);
}
