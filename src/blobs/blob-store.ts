// The blob store's interface: content-addressed bytes named by their blake3 digest. The
// filesystem backend (file-blob-store.ts) is the embedded default; others implement the same.
import type { Readable } from "node:stream";

/** Bytes to store: a stream (Node Readable or any async iterable of chunks) or a buffer. */
export type BlobSource = AsyncIterable<Uint8Array | string> | Readable | Uint8Array;

/** Options of BlobStore.put. */
export interface PutOptions {
  /** `blake3:<hex>`; when the bytes hash differently, HashMismatchError and nothing is stored. */
  expectedHash?: string;
  /** Largest accepted size; a longer stream gives PayloadTooLargeError and nothing is stored. */
  maxBytes?: number;
}

/** Outcome of BlobStore.put. */
export interface PutResult {
  /** blake3 hex of the bytes, the blob's name. */
  key: string;
  /** The same digest in wire form, `blake3:<hex>`. */
  hash: string;
  size: number;
  /** false when identical bytes were already stored (deduplicated). */
  created: boolean;
}

/** Outcome of BlobStore.stage: the blob's name exists; its durability follows. */
export interface StagedPut extends PutResult {
  /** The bytes while they are not durable here yet (a commit carries them meanwhile); null when nothing waits. */
  pending: Uint8Array | null;
  /**
   * Settles once bytes and name are synced here, with the wall-clock time just after this stage
   * wrote the name's file (its mtime is no later; a later touch is another put's), or null when it
   * wrote none (nothing was staged, or another writer's name holds the bytes); rejects when an
   * fsync failed.
   */
  durable: Promise<number | null>;
}

/** Size and last write/touch time of a stored blob. */
export interface BlobStat {
  size: number;
  mtimeMs: number;
}

/** An inclusive byte range, as in HTTP `Range: bytes=start-end`. */
export interface ByteRange {
  start?: number;
  end?: number;
}

/** Options of BlobStore.open. */

/** What a presigned download link says besides its blob. */
export interface DownloadLink {
  /** When the link stops working, epoch ms (the link it stands for expires then too). */
  expiresAt: number;
  /** The name the client saves the file under (`Content-Disposition`). */
  fileName: string;
  /** The `Content-Type` the bytes are served with. */
  contentType: string;
}

/** Content-addressed bytes: put (hashed while streaming), read, delete and list. */
export interface BlobStore {
  /** Streams bytes into the store while hashing them; see PutOptions for the refusals. */
  put(source: BlobSource, options?: PutOptions): Promise<PutResult>;
  /** Stores a buffer; same result and refusals as put. */
  putBytes(bytes: Uint8Array, options?: PutOptions): Promise<PutResult>;
  /**
   * Stores a buffer whose bytes the caller keeps in a durable write of its own until `durable`
   * settles (`pending` non-null); a backend without write-behind stores it as put does.
   */
  stage(bytes: Uint8Array): Promise<StagedPut>;
  /** Makes every staged blob durable now; resolves once each is (or failed). */
  flushStaged(): Promise<void>;
  /** Writes back the kept bytes of a staged blob over whatever its name holds; false when they do not hash to `key`. */
  restore(key: string, bytes: Uint8Array): Promise<boolean>;
  /** Whether a blob is stored under `key`. */
  has(key: string): Promise<boolean>;
  /** Size and last write/touch time of a blob, or null when absent. */
  stat(key: string): Promise<BlobStat | null>;
  /** A stream of the blob's bytes, optionally an inclusive range; BlobNotFoundError when absent. */
  open(key: string, range?: ByteRange): Promise<Readable>;
  /** The blob's bytes (optionally a range of a blob of `size` bytes), small ones as a buffer; BlobNotFoundError when absent. */
  contents(key: string, size: number, range?: ByteRange): Promise<Buffer | Readable>;
  /**
   * Removes a blob; false when it was absent or, with `unlessTouchedAfter`, when a put wrote or
   * deduplicated onto it after that time (a record over it may be about to be committed).
   */
  delete(key: string, options?: { unlessTouchedAfter?: number }): Promise<boolean>;
  /** Every stored key, for garbage-collection sweeps (order unspecified). */
  keys(): AsyncGenerator<string>;
  /** Rejects while the store cannot be reached (readiness). */
  check(): Promise<void>;
  /** A URL that serves the bytes without this server (a presigned GET on a bucket), or null when this server serves them. */
  downloadUrl(key: string, link: DownloadLink): Promise<string | null>;
  /** Releases what the store holds open (connections). */
  close(): Promise<void>;
}
