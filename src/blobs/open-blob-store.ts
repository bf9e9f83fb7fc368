// Opens the blob store the configuration names: an S3-compatible bucket, or the filesystem.
import type { BlobStore } from "./blob-store.ts";
import { MissingPackageError } from "./errors.ts";
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
  /** Bound of one request to the bucket and of one upload's requests together, in ms (default: the store's, 60 s). */
  blobRequestMs?: number;
}

/** The AWS SDK's packages: optional peer dependencies, installed only by those who use a bucket. */
export const AWS_SDK_PACKAGES = ["@aws-sdk/client-s3", "@aws-sdk/s3-request-presigner"];

/** Loads the S3 backend (and with it the AWS SDK). */
export type S3BackendLoader = () => Promise<typeof import("./s3-blob-store.ts")>;

/** The S3 store when `blobStore` is set, else the filesystem store under the data directory. */
export async function openBlobStore(config: BlobStoreConfig, loadS3: S3BackendLoader = () => import("./s3-blob-store.ts")): Promise<BlobStore> {
  if (config.blobStore !== null) {
    const location = parseS3Url(config.blobStore);
    // Loaded here only: the AWS SDK is not worth its start-up time to a server on the filesystem, and
    // an install for SQLite and files need not have it at all.
    const { S3BlobStore } = await loadS3().catch((err: unknown) => {
      throw isMissingAwsSdk(err) ? new MissingPackageError(`--blob-store ${config.blobStore}`, AWS_SDK_PACKAGES) : err;
    });
    const bounds = config.blobRequestMs === undefined ? {} : { requestBoundMs: config.blobRequestMs, putBoundMs: config.blobRequestMs };
    return S3BlobStore.open({ location, endpoint: config.s3Endpoint, ...bounds });
  }
  return FileBlobStore.open(config.dataDir, config.blobDir === null ? {} : { root: config.blobDir });
}

function isMissingAwsSdk(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return e?.code === "ERR_MODULE_NOT_FOUND" && typeof e.message === "string" && e.message.includes("@aws-sdk/");
}
