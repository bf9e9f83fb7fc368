// Public surface of the blob layer: the content-addressed store, blake3 helpers, URL signing.
export { BlobStore } from "./blob-store.ts";
export type { BlobSource, BlobStat, BlobStoreOptions, ByteRange, PutOptions, PutResult, StagedPut } from "./blob-store.ts";
export { assertBlobKey, blobPath } from "./blob-key.ts";
export {
  BLAKE3_PREFIX,
  blake3Backend,
  blake3Hex,
  blake3HexOfStream,
  createBlake3Hasher,
  isBlake3Hex,
  parseBlake3Hash,
  toBlake3Hash,
} from "../domain/blake3.ts";
export type { Blake3Hasher } from "../domain/blake3.ts";
export { BlobNotFoundError, HashMismatchError, InvalidBlobKeyError, PayloadTooLargeError } from "./errors.ts";
export { SIGNING_KEY_FILE, UrlSigner, loadOrCreateSigningKey } from "./signed-url.ts";
export type { QueryInput, SignatureCheck, SignedUrl } from "./signed-url.ts";
