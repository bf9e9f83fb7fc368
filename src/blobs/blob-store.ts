// Content-addressed blob store on the local filesystem: one file per distinct content,
// named by its blake3 digest. Writes stream to a temp file in the same filesystem while
// hashing, and become visible only through an atomic link/rename of a complete, fsynced file.
import { randomUUID } from "node:crypto";
import { link, mkdir, open, readdir, rename, rm, stat, unlink, utimes } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { createBlake3Hasher, parseBlake3Hash, toBlake3Hash, isBlake3Hex } from "./blake3.ts";
import { blobPath } from "./blob-key.ts";
import { BlobNotFoundError, HashMismatchError, InvalidBlobKeyError, PayloadTooLargeError } from "./errors.ts";

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
export interface BlobStoreOptions {
  /** Temp files of dead processes, and any older than this, are removed at open (default 24 h). */
  staleTempMs?: number;
  /** The blob directory (default `<dataDir>/blobs`); several nodes may share one (a network filesystem). */
  root?: string;
}

const TEMP_SUFFIX = ".tmp";
/** This machine in temp file names: on a directory several nodes share, a pid means something only on its own host. */
const HOST_TAG = hostname().replace(/[^A-Za-z0-9-]/g, "-") || "host";
const DAY_MS = 24 * 60 * 60 * 1000;

/** The on-disk content-addressed blob store rooted at `<dataDir>/blobs`. */
export class BlobStore {
  /** Absolute directory that holds the fan-out tree. */
  readonly root: string;
  private readonly tmpDir: string;

  private constructor(root: string) {
    this.root = root;
    this.tmpDir = join(root, "tmp");
  }

  /** Opens (creating if needed) the store under `<dataDir>/blobs` (or `options.root`) and removes temp files left by a crash. */
  static async open(dataDir: string, options: BlobStoreOptions = {}): Promise<BlobStore> {
    const store = new BlobStore(options.root ?? join(dataDir, "blobs"));
    await mkdir(store.tmpDir, { recursive: true });
    await store.removeStaleTemps(options.staleTempMs ?? DAY_MS);
    return store;
  }

  /** The file path of a blob (for zero-copy readers such as sharp); throws InvalidBlobKeyError on a bad key. */
  pathOf(key: string): string {
    return blobPath(this.root, key);
  }

  /** Streams bytes into the store while hashing them; see PutOptions for the refusals. */
  async put(source: BlobSource, options: PutOptions = {}): Promise<PutResult> {
    const expectedHex = checkExpectedHash(options.expectedHash);
    const maxBytes = checkMaxBytes(options.maxBytes);
    // The pid and host in the name let a later open tell a crashed writer's file from a live one's.
    const tempPath = join(this.tmpDir, `${process.pid}@${HOST_TAG}.${randomUUID()}${TEMP_SUFFIX}`);
    let handle: FileHandle | null = await open(tempPath, "wx", 0o644);
    try {
      const hasher = await createBlake3Hasher();
      let size = 0;
      for await (const chunk of chunksOf(source)) {
        size += chunk.byteLength;
        if (maxBytes !== null && size > maxBytes) throw new PayloadTooLargeError(maxBytes);
        hasher.update(chunk);
        await writeAll(handle, chunk);
      }
      const key = hasher.digestHex();
      const hash = toBlake3Hash(key);
      if (expectedHex !== null && key !== expectedHex) {
        throw new HashMismatchError(toBlake3Hash(expectedHex), hash);
      }
      const finalPath = this.pathOf(key);
      if (await touchIfPresent(finalPath)) return { key, hash, size, created: false };

      await handle.sync();
      await handle.close();
      handle = null;
      const made = await mkdir(dirname(finalPath), { recursive: true });
      if (made !== undefined) await syncDirsDown(this.root, dirname(finalPath));
      const created = await publish(tempPath, finalPath);
      if (created) await syncDir(dirname(finalPath));
      return { key, hash, size, created };
    } finally {
      if (handle !== null) await handle.close().catch(() => undefined);
      // After a successful link the temp name is a second link to the blob; drop it either way.
      await rm(tempPath, { force: true });
    }
  }

  /** Stores a buffer; same result and refusals as put. */
  putBytes(bytes: Uint8Array, options: PutOptions = {}): Promise<PutResult> {
    return this.put(bytes, options);
  }

  /** Whether a blob is stored under `key`. */
  async has(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  /** Size and mtime of a blob, or null when absent. */
  async stat(key: string): Promise<BlobStat | null> {
    try {
      const info = await stat(this.pathOf(key));
      return { size: info.size, mtimeMs: info.mtimeMs };
    } catch (error) {
      if (isCode(error, "ENOENT")) return null;
      throw error;
    }
  }

  /** A stream of the blob's bytes, optionally an inclusive range; BlobNotFoundError when absent. */
  async open(key: string, range: ByteRange = {}): Promise<Readable> {
    const { start, end } = checkRange(range);
    const path = this.pathOf(key);
    let handle: FileHandle;
    try {
      handle = await open(path, "r");
    } catch (error) {
      if (isCode(error, "ENOENT")) throw new BlobNotFoundError(key);
      throw error;
    }
    // The stream owns the handle and closes it on end, error or destroy.
    return handle.createReadStream({ start, end, autoClose: true });
  }

  /**
   * Removes a blob; false when it was absent or, with `unlessTouchedAfter`, when a put wrote or
   * deduplicated onto it after that time (a record over it may be about to be committed).
   */
  async delete(key: string, options: { unlessTouchedAfter?: number } = {}): Promise<boolean> {
    const path = this.pathOf(key);
    try {
      if (options.unlessTouchedAfter !== undefined) {
        const info = await stat(path);
        if (info.mtimeMs > options.unlessTouchedAfter) return false;
      }
      await unlink(path);
      return true;
    } catch (error) {
      if (isCode(error, "ENOENT")) return false;
      throw error;
    }
  }

  /** Every stored key, for garbage-collection sweeps (order unspecified). */
  async *keys(): AsyncGenerator<string> {
    for (const first of await listDir(this.root)) {
      if (!/^[0-9a-f]{2}$/.test(first)) continue;
      for (const second of await listDir(join(this.root, first))) {
        if (!/^[0-9a-f]{2}$/.test(second)) continue;
        for (const name of await listDir(join(this.root, first, second))) {
          if (isBlake3Hex(name) && name.startsWith(first + second)) yield name;
        }
      }
    }
  }

  private async removeStaleTemps(staleTempMs: number): Promise<void> {
    const now = Date.now();
    for (const name of await listDir(this.tmpDir)) {
      const path = join(this.tmpDir, name);
      const [, pidText, host] = /^(\d+)(?:@([A-Za-z0-9-]+))?\./.exec(name) ?? [];
      const pid = Number(pidText);
      // Another host's writer may be alive whatever our process table says: only its age counts.
      const local = host === undefined || host === HOST_TAG;
      let stale = !Number.isSafeInteger(pid) || pid <= 0 || (local && !processAlive(pid));
      if (!stale) {
        const info = await stat(path).catch(() => null);
        stale = info !== null && now - info.mtimeMs > staleTempMs;
      }
      if (stale) await rm(path, { force: true, recursive: true });
    }
  }
}

function checkExpectedHash(expectedHash: string | undefined): string | null {
  if (expectedHash === undefined) return null;
  const hex = parseBlake3Hash(expectedHash);
  if (hex === null) throw new InvalidBlobKeyError();
  return hex;
}

function checkMaxBytes(maxBytes: number | undefined): number | null {
  if (maxBytes === undefined) return null;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new RangeError("maxBytes must be a non-negative integer");
  return maxBytes;
}

function checkRange(range: ByteRange): { start: number | undefined; end: number | undefined } {
  const { start, end } = range;
  for (const bound of [start, end]) {
    if (bound !== undefined && (!Number.isSafeInteger(bound) || bound < 0)) {
      throw new RangeError("range bounds must be non-negative integers");
    }
  }
  if (start !== undefined && end !== undefined && end < start) throw new RangeError("range end precedes start");
  return { start, end };
}

async function* chunksOf(source: BlobSource): AsyncGenerator<Uint8Array> {
  if (source instanceof Uint8Array) {
    yield source;
    return;
  }
  for await (const chunk of source as AsyncIterable<Uint8Array | string>) {
    yield typeof chunk === "string" ? Buffer.from(chunk) : chunk;
  }
}

async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset);
    offset += bytesWritten;
  }
}

/** Marks an existing blob as just used (its mtime guards it from a concurrent GC); false when absent. */
async function touchIfPresent(path: string): Promise<boolean> {
  const now = new Date();
  try {
    await utimes(path, now, now);
    return true;
  } catch (error) {
    if (isCode(error, "ENOENT")) return false;
    throw error;
  }
}

/** Makes `finalPath` name the temp file's content without replacing an existing blob; false if one was there. */
async function publish(tempPath: string, finalPath: string): Promise<boolean> {
  try {
    await link(tempPath, finalPath);
    return true;
  } catch (error) {
    if (isCode(error, "EEXIST")) return false;
    // Filesystems without hard links: rename is still atomic, and identical content makes a replace harmless.
    if (isCode(error, "EPERM") || isCode(error, "ENOTSUP") || isCode(error, "EOPNOTSUPP") || isCode(error, "EMLINK")) {
      await rename(tempPath, finalPath);
      return true;
    }
    throw error;
  }
}

/** fsyncs a directory so that a new entry in it survives a power loss. */
async function syncDir(path: string): Promise<void> {
  let handle: FileHandle | null = null;
  try {
    handle = await open(path, "r");
    await handle.sync();
  } catch (error) {
    // Some platforms cannot fsync a directory; the data itself was already synced.
    if (!isCode(error, "EISDIR") && !isCode(error, "EINVAL") && !isCode(error, "EPERM")) throw error;
  } finally {
    await handle?.close();
  }
}

/** fsyncs the chain of directories from `root` down to the parent of `leaf` after mkdir created some. */
async function syncDirsDown(root: string, leaf: string): Promise<void> {
  for (let dir = dirname(leaf); dir.length >= root.length; dir = dirname(dir)) {
    await syncDir(dir);
    if (dir === root) break;
  }
}

async function listDir(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (error) {
    if (isCode(error, "ENOENT")) return [];
    throw error;
  }
}

function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isCode(error, "EPERM");
  }
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}

