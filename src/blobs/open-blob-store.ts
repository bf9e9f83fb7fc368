// Opens the blob store the configuration names: an S3-compatible bucket, or the filesystem.
import type { BlobStore } from "./blob-store.ts";
import { FileBlobStore } from "./file-blob-store.ts";
import { parseS3Url } from "./s3-location.ts";

/** Where blobs live, as configured. */
export interface BlobStoreConfig {
  dataDir: string;
  /** A blob directory; null = `<dataDir>/blobs`. */
  blobDir: string | null;
  /** `s3://bucket/prefix`, or null for the filesystem. */
  blobStore: string | null;
  /** Endpoint of an S3-compatible service; null = AWS. */
  s3Endpoint: string | null;
}

/** The S3 store when `blobStore` is set, else the filesystem store under the data directory. */
export async function openBlobStore(config: BlobStoreConfig): Promise<BlobStore> {
  if (config.blobStore !== null) {
    const location = parseS3Url(config.blobStore);
    // Loaded here only: the AWS SDK is not worth its start-up time to a server on the filesystem.
    const { S3BlobStore } = await import("./s3-blob-store.ts");
    return S3BlobStore.open({ location, endpoint: config.s3Endpoint });
  }
  return FileBlobStore.open(config.dataDir, config.blobDir === null ? {} : { root: config.blobDir });
}
