// Blobs whose lasting home is the database (small outputs on PostgreSQL, written in their
// record's statement: no file, no object, no fsync of their own) in front of the blob store that
// holds every other: reads find either, removals take both, the orphan sweep lists both.
import { Readable } from "node:stream";
import { checkRange, sliceOf } from "./blob-input.ts";
import type { BlobSource, BlobStat, BlobStore, ByteRange, DownloadLink, PutOptions, PutResult, StagedPut } from "./blob-store.ts";
import { BlobNotFoundError } from "./errors.ts";

/** Largest output kept in the database instead of the blob store (see InlineBlobs). */
export const INLINE_BLOB_MAX_BYTES = 64 * 1024;

/** Where the inline bytes are: the store's inline_blobs table (a Store is one). */
export interface InlineBlobTable {
  /** The bytes under `key` and the newest write over them (epoch ms), or null. */
  inlineBlob(key: string): Promise<{ bytes: Uint8Array; touched_at: number } | null>;
  /** Keys after `afterKey` in key order, at most `limit`. */
  inlineBlobKeys(afterKey: string, limit: number): Promise<string[]>;
  /** Removes the row unless a record names it or a write touched it after `unlessTouchedAfter`. */
  dropInlineBlob(key: string, unlessTouchedAfter: number): Promise<boolean>;
}

/** Keys per page of the table's listing. */
const KEYS_PAGE = 1_000;

/**
 * A BlobStore over `files` (the filesystem or a bucket) and `table`. Writes go to `files` (inline
 * bytes are written by their records, not here). A read whose size says it may be inline asks the
 * table first, any other the files first; either falls back to the other.
 */
export class InlineBlobs implements BlobStore {
  readonly #files: BlobStore;
  readonly #table: InlineBlobTable;

  constructor(files: BlobStore, table: InlineBlobTable) {
    this.#files = files;
    this.#table = table;
  }

  /** The store every blob but the inline ones lives in. */
  get files(): BlobStore {
    return this.#files;
  }

  put(source: BlobSource, options?: PutOptions): Promise<PutResult> {
    return this.#files.put(source, options);
  }

  putBytes(bytes: Uint8Array, options?: PutOptions): Promise<PutResult> {
    return this.#files.putBytes(bytes, options);
  }

  stage(bytes: Uint8Array): Promise<StagedPut> {
    return this.#files.stage(bytes);
  }

  flushStaged(): Promise<void> {
    return this.#files.flushStaged();
  }

  restore(key: string, bytes: Uint8Array): Promise<boolean> {
    return this.#files.restore(key, bytes);
  }

  async has(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async stat(key: string): Promise<BlobStat | null> {
    const stat = await this.#files.stat(key);
    if (stat !== null) return stat;
    const row = await this.#table.inlineBlob(key);
    return row === null ? null : { size: row.bytes.byteLength, mtimeMs: row.touched_at };
  }

  async open(key: string, range: ByteRange = {}): Promise<Readable> {
    try {
      return await this.#files.open(key, range);
    } catch (err) {
      if (!(err instanceof BlobNotFoundError)) throw err;
      const bytes = await this.#inline(key, range);
      if (bytes === null) throw err;
      return Readable.from([bytes]);
    }
  }

  async contents(key: string, size: number, range: ByteRange = {}): Promise<Buffer | Readable> {
    return (size <= INLINE_BLOB_MAX_BYTES ? await this.#inline(key, range) : null) ?? this.#files.contents(key, size, range);
  }

  /** Removes the blob from both homes; true when either held it and let it go. */
  async delete(key: string, options: { unlessTouchedAfter?: number } = {}): Promise<boolean> {
    const fromFiles = await this.#files.delete(key, options);
    const fromTable = await this.#table.dropInlineBlob(key, options.unlessTouchedAfter ?? Number.MAX_SAFE_INTEGER);
    return fromFiles || fromTable;
  }

  async *keys(): AsyncGenerator<string> {
    yield* this.#files.keys();
    const page = (after: string) => this.#table.inlineBlobKeys(after, KEYS_PAGE);
    for (let keys = await page(""); keys.length > 0; keys = await page(keys.at(-1)!)) yield* keys;
  }

  check(): Promise<void> {
    return this.#files.check();
  }

  /** Null for inline bytes (this server serves them); else the files' link. */
  async downloadUrl(key: string, link: DownloadLink): Promise<string | null> {
    const url = await this.#files.downloadUrl(key, link);
    if (url === null) return null;
    return (await this.#table.inlineBlob(key)) === null ? url : null;
  }

  close(): Promise<void> {
    return this.#files.close();
  }

  /** The inline bytes under `key`, an inclusive range of them over the same memory, or null. */
  async #inline(key: string, range: ByteRange): Promise<Buffer | null> {
    const { start = 0, end } = checkRange(range);
    const row = await this.#table.inlineBlob(key);
    return row === null ? null : sliceOf(row.bytes, start, end);
  }
}
