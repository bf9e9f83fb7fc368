// Public surface of the blob layer: the content-addressed store, blake3 helpers, URL signing.
export type { BlobSource, BlobStat, BlobStore, ByteRange, DownloadLink, PutOptions, PutResult, StagedPut } from "./blob-store.ts";
export { openBlobStore, type BlobStoreConfig } from "./open-blob-store.ts";
// The S3 backend (s3-blob-store.ts) is loaded only when configured: the AWS SDK costs start-up time.
export type { S3BlobStore, S3BlobStoreOptions } from "./s3-blob-store.ts";
export { parseS3Url, s3Url, type S3Location } from "./s3-location.ts";
export { FileBlobStore } from "./file-blob-store.ts";
export { INLINE_BLOB_MAX_BYTES, InlineBlobs, type InlineBlobTable } from "./inline-blobs.ts";
export type { FileBlobStoreOptions, FileBlobStoreOptions as BlobStoreOptions } from "./file-blob-store.ts";
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
export { BlobNotFoundError, BlobUnavailableError, HashMismatchError, InvalidBlobKeyError, MissingPackageError, PayloadTooLargeError } from "./errors.ts";
export { BlobHealth, type BlobHealthOptions } from "./blob-health.ts";
export { SIGNING_KEY_FILE, UrlSigner, loadOrCreateSigningKey } from "./signed-url.ts";
export type { QueryInput, SignatureCheck, SignedUrl } from "./signed-url.ts";
