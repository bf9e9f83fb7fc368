// Content-addressed blob store on the local filesystem: one file per distinct content,
// named by its blake3 digest. Writes stream to a temp file in the same filesystem while
// hashing, and become visible only through an atomic link/rename of a complete, fsynced file.
import { randomUUID } from "node:crypto";
import { closeSync, openSync, readSync } from "node:fs";
import { mkdir, open, rm, stat, unlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { blake3Hex, createBlake3Hasher, toBlake3Hash, isBlake3Hex } from "../domain/blake3.ts";
import { checkExpectedHash, checkMaxBytes, checkRange, chunksOf, sliceOf } from "./blob-input.ts";
import { blobPath } from "./blob-key.ts";
import type { BlobSource, BlobStat, BlobStore, ByteRange, DownloadLink, PutOptions, PutResult, StagedPut } from "./blob-store.ts";
import { BlobNotFoundError, HashMismatchError, PayloadTooLargeError } from "./errors.ts";
import { ASYNC_OPS, SYNC_OPS, isCode, isLocalDisk, listDir, processAlive, writeAll, type FileOps, type TempFile } from "./file-ops.ts";
import { WriteBehind } from "./write-behind.ts";
export { STAGE_BATCH_MS } from "./write-behind.ts";

/** Options of FileBlobStore.open. */
export interface FileBlobStoreOptions {
  /** Temp files of dead processes, and any older than this, are removed at open (default 24 h). */
  staleTempMs?: number;
  /** The blob directory (default `<dataDir>/blobs`); several nodes may share one (a network filesystem). */
  root?: string;
  /** Test seam: runs every fsync (`run`) of a put, so that a test can hold one and look at the disk meanwhile. */
  syncHook?: SyncHook;
  /** How long a staged blob waits for the others of its batch before it is named (default 250 ms; 0: after the caller's turn). */
  stageBatchMs?: number;
  /** After a staged blob failed to be named, the wait before its next try; it doubles up to 60 s (default 1 s). */
  stageRetryMs?: number;
  /** Bytes of staged blobs that failed to be named kept in memory for their retries (default 64 MiB); beyond it, one is dropped (its commit keeps the bytes: the next start writes them back). */
  stageRetainBytes?: number;
}

/** See FileBlobStoreOptions.syncHook. */
export type SyncHook = (kind: "file" | "dir", path: string, run: () => Promise<void>) => Promise<void>;

const TEMP_SUFFIX = ".tmp";
/** This machine in temp file names: on a directory several nodes share, a pid means something only on its own host. */
const HOST_TAG = hostname().replace(/[^A-Za-z0-9-]/g, "-") || "host";
const DAY_MS = 24 * 60 * 60 * 1000;
/** Largest buffer written with synchronous calls (see #putBuffer). */
const SMALL_WRITE_BYTES = 256 * 1024;
/** Largest read served as one buffer read with a synchronous call (see contents). */
const SMALL_READ_BYTES = 256 * 1024;

/** The on-disk content-addressed blob store rooted at `<dataDir>/blobs`. */
export class FileBlobStore implements BlobStore {
  /** Absolute directory that holds the fan-out tree. */
  readonly root: string;
  private readonly tmpDir: string;
  readonly #syncHook: SyncHook | undefined;
  /** Whether the blob directory is on a local disk (not a network filesystem): small puts use synchronous calls. */
  readonly #localDisk: boolean;
  /** Blobs this process is publishing, until their name is durable (true) or the put failed (false). */
  readonly #publishing = new Map<string, Promise<boolean>>();
  /** Staged blobs not named yet (see stage): reads are served from their bytes. */
  readonly #staged: WriteBehind;

  private constructor(root: string, localDisk: boolean, options: FileBlobStoreOptions) {
    this.root = root;
    this.tmpDir = join(root, "tmp");
    this.#syncHook = options.syncHook;
    this.#localDisk = localDisk;
    this.#staged = new WriteBehind({ batchMs: options.stageBatchMs, retryMs: options.stageRetryMs, retainBytes: options.stageRetainBytes });
  }

  /** Opens (creating if needed) the store under `<dataDir>/blobs` (or `options.root`) and removes temp files left by a crash. */
  static async open(dataDir: string, options: FileBlobStoreOptions = {}): Promise<FileBlobStore> {
    const root = options.root ?? join(dataDir, "blobs");
    await mkdir(join(root, "tmp"), { recursive: true });
    // Asked once the directory exists: a statfs of a missing path fails, which read as "not local".
    const store = new FileBlobStore(root, await isLocalDisk(root), options);
    await store.removeStaleTemps(options.staleTempMs ?? DAY_MS);
    return store;
  }

  /** The file path of a blob (a staged one has none until durable); throws InvalidBlobKeyError on a bad key. */
  pathOf(key: string): string {
    return blobPath(this.root, key);
  }

  /** Streams bytes into the store while hashing them; see PutOptions for the refusals. */
  async put(source: BlobSource, options: PutOptions = {}): Promise<PutResult> {
    const expectedHex = checkExpectedHash(options.expectedHash);
    const maxBytes = checkMaxBytes(options.maxBytes);
    if (source instanceof Uint8Array) return this.#putBuffer(source, expectedHex, maxBytes);
    const tempPath = this.#tempPath();
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
      if (expectedHex !== null && key !== expectedHex) throw new HashMismatchError(toBlake3Hash(expectedHex), toBlake3Hash(key));
      if (await this.#reuse(key, ASYNC_OPS)) return { key, hash: toBlake3Hash(key), size, created: false };
      const file = handle;
      handle = null;
      return { key, hash: toBlake3Hash(key), size, created: await this.#install(file, tempPath, key, ASYNC_OPS) };
    } finally {
      if (handle !== null) await handle.close().catch(() => undefined);
      // After a successful link the temp name is a second link to the blob; drop it either way.
      await rm(tempPath, { force: true });
    }
  }

  /**
   * A buffer is hashed before anything is written: bytes already stored cost no file at all. A
   * small one on a local disk is written with synchronous calls (page-cache copies of a few µs,
   * as the SQLite store's commits are), fsyncs and inode allocations excepted (SYNC_OPS): a put
   * then costs four round trips to the thread pool instead of about ten, which is most of its
   * time on a busy host.
   */
  async #putBuffer(bytes: Uint8Array, expectedHex: string | null, maxBytes: number | null): Promise<PutResult> {
    if (maxBytes !== null && bytes.byteLength > maxBytes) throw new PayloadTooLargeError(maxBytes);
    const key = await blake3Hex(bytes);
    const hash = toBlake3Hash(key);
    if (expectedHex !== null && key !== expectedHex) throw new HashMismatchError(toBlake3Hash(expectedHex), hash);
    const size = bytes.byteLength;
    const ops = size <= SMALL_WRITE_BYTES && this.#localDisk ? SYNC_OPS : ASYNC_OPS;
    if (await this.#reuse(key, ops)) return { key, hash, size, created: false };
    const tempPath = this.#tempPath();
    try {
      const file = await ops.create(tempPath, bytes);
      return { key, hash, size, created: await this.#install(file, tempPath, key, ops) };
    } finally {
      await ops.remove(tempPath);
    }
  }

  /**
   * Stores a buffer without waiting for the disk, for a caller that keeps `pending` in a durable
   * write of its own meanwhile (the job's end: one fsync for bytes, records and end) and hands
   * them to restore should a power loss come first. The bytes are served from memory; in the
   * background they are written to a temp file, synced and only then named, as by put, so that a
   * name never holds bytes a power loss could tear. `durable` settles then. A buffer over 256 KiB,
   * or on a network filesystem, is put as by put (pending null).
   *
   * Staged blobs are named in batches (see FileBlobStoreOptions.stageBatchMs, and flushStaged): the
   * bytes are durable in the caller's write meanwhile, and the fsyncs of a batch share the
   * filesystem's journal commits, off the path of the jobs running then.
   */
  async stage(bytes: Uint8Array): Promise<StagedPut> {
    const durablePut = async (): Promise<StagedPut> => ({ ...(await this.#putBuffer(bytes, null, null)), pending: null, durable: Promise.resolve(null) });
    if (bytes.byteLength > SMALL_WRITE_BYTES || !this.#localDisk) return durablePut();
    const key = await blake3Hex(bytes);
    const stored: StagedPut = { key, hash: toBlake3Hash(key), size: bytes.byteLength, created: false, pending: null, durable: Promise.resolve(null) };
    const staged = this.#staged.get(key);
    // Staged already: not durable yet either, so this caller keeps the bytes too. One whose try
    // failed waits for its retry: this caller stores the bytes itself.
    if (staged !== undefined) return staged.retry === null ? { ...stored, pending: bytes, durable: staged.durable } : durablePut();
    if (await this.#reuse(key, SYNC_OPS)) return stored; // once durable, if this process is still publishing it
    if (this.#publishing.has(key)) return durablePut(); // another put is writing these bytes: #install waits for it
    // Another stage of these bytes got here during the check: that one is named.
    const first = this.#staged.get(key);
    if (first !== undefined) return { ...stored, pending: bytes, durable: first.durable };
    // Written, synced and named with its batch, after the caller's turn (its commit comes first);
    // a put of these bytes meanwhile writes a copy of its own, and one of the two links wins, as
    // between processes.
    const install = async (): Promise<number | null> => {
      // Off the event loop: a new file or directory waits for the filesystem's journal, which
      // the batch's own fsyncs (and the WAL's) hold for a while; the loop must not wait with it.
      // Stored meanwhile (a put of the same bytes): that name is the one.
      if (!this.#publishing.has(key) && (await this.#reuse(key, ASYNC_OPS))) return null;
      const tempPath = this.#tempPath();
      try {
        const file = await ASYNC_OPS.create(tempPath, bytes);
        // The file's mtime is set by now (+1: its sub-ms part); the link keeps it.
        const writtenAt = Date.now() + 1;
        return (await this.#install(file, tempPath, key, ASYNC_OPS)) ? writtenAt : null;
      } finally {
        await ASYNC_OPS.remove(tempPath);
      }
    };
    const entry = this.#staged.add(key, bytes, install);
    return { ...stored, created: true, pending: bytes, durable: entry.durable };
  }

  /** Names every staged blob now, without waiting for its batch; resolves once each is named (or failed). */
  async flushStaged(): Promise<void> {
    await this.#staged.flush();
  }

  /**
   * Writes back the bytes of a staged blob that a commit kept, durably and over whatever its name
   * holds (a power loss may have left it empty or torn); false, writing nothing, when they do not
   * hash to `key`.
   */
  async restore(key: string, bytes: Uint8Array): Promise<boolean> {
    if ((await blake3Hex(bytes)) !== key) return false;
    // The name goes, then a put writes the bytes as any other (the caller keeps them until then).
    await rm(this.pathOf(key), { force: true });
    await this.#putBuffer(bytes, null, null);
    return true;
  }

  /** A new temp file's path: the pid and host in it let a later open tell a crashed writer's file from a live one's. */
  #tempPath(): string {
    return join(this.tmpDir, `${process.pid}@${HOST_TAG}.${randomUUID()}${TEMP_SUFFIX}`);
  }

  /**
   * Whether the blob is stored already (it is touched: its mtime guards it from a concurrent GC).
   * One this process is still publishing counts once its name is durable.
   */
  async #reuse(key: string, ops: FileOps): Promise<boolean> {
    const path = this.pathOf(key);
    if (!(await ops.touch(path))) return false;
    const publishing = this.#publishing.get(key);
    if (publishing !== undefined && !(await publishing)) await this.#sync("dir", dirname(path), () => ops.syncDir(dirname(path)));
    return true;
  }

  /**
   * Publishes a complete temp file (closed here) under the blob's name. The bytes are synced
   * before the name exists, and the name is synced before this resolves; directories mkdir made
   * are synced meanwhile, alongside the bytes. False when the blob was stored first by another
   * put (this process's puts of one blob publish one at a time).
   */
  async #install(file: TempFile, tempPath: string, key: string, ops: FileOps): Promise<boolean> {
    const finalPath = this.pathOf(key);
    const dir = dirname(finalPath);
    try {
      for (let other = this.#publishing.get(key); other !== undefined; other = this.#publishing.get(key)) {
        await other;
        if (await this.#reuse(key, ops)) {
          await file.close();
          return false;
        }
      }
    } catch (error) {
      await file.close().catch(() => undefined);
      throw error;
    }
    let settle!: (durable: boolean) => void;
    this.#publishing.set(key, new Promise<boolean>((resolve) => (settle = resolve)));
    let durable = false;
    try {
      const bytes = this.#sync("file", tempPath, () => file.sync()).finally(() => file.close());
      const dirs = ops.mkdir(dir).then((made) => (made === undefined ? undefined : this.#syncParents(made, dir, ops)));
      // Both settle before anything goes on, so that no sync outlives a failed put.
      for (const outcome of await Promise.allSettled([bytes, dirs])) if (outcome.status === "rejected") throw outcome.reason;
      const created = await ops.publish(tempPath, finalPath);
      // Another process's put may not have synced the name it made yet: syncing it is ours then.
      await this.#sync("dir", dir, () => ops.syncDir(dir));
      durable = true;
      return created;
    } finally {
      this.#publishing.delete(key);
      settle(durable);
    }
  }

  /** fsyncs the parent of each directory mkdir created, from `made` (the first) down to `leaf`, at once. */
  async #syncParents(made: string, leaf: string, ops: FileOps): Promise<void> {
    const parents: string[] = [];
    for (let dir = leaf; dir.length >= made.length && dir.length > this.root.length; dir = dirname(dir)) parents.push(dirname(dir));
    await Promise.all(parents.map((p) => this.#sync("dir", p, () => ops.syncDir(p))));
  }

  #sync(kind: "file" | "dir", path: string, run: () => Promise<void>): Promise<void> {
    return this.#syncHook ? this.#syncHook(kind, path, run) : run();
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
    const staged = this.#staged.get(key);
    if (staged !== undefined) return { size: staged.bytes.byteLength, mtimeMs: staged.mtimeMs };
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
    const staged = this.#staged.get(key);
    if (staged !== undefined) return Readable.from([sliceOf(staged.bytes, start ?? 0, end)]);
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
   * The blob's bytes (optionally an inclusive range of a blob of `size` bytes): up to 256 KiB on a
   * local disk as one buffer read with one synchronous call, as small puts write (a stream costs
   * an open, reads and a close on the thread pool: most of a small download's time on a busy
   * host); anything else as open's stream. BlobNotFoundError when absent.
   */
  async contents(key: string, size: number, range: ByteRange = {}): Promise<Buffer | Readable> {
    const { start = 0, end = size - 1 } = checkRange(range);
    const staged = this.#staged.get(key);
    if (staged !== undefined) return sliceOf(staged.bytes, start, end);
    if (end - start + 1 > SMALL_READ_BYTES || !this.#localDisk) return this.open(key, range);
    const path = this.pathOf(key);
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (error) {
      if (isCode(error, "ENOENT")) throw new BlobNotFoundError(key);
      throw error;
    }
    try {
      const bytes = Buffer.allocUnsafe(Math.max(0, end - start + 1));
      let read = 0;
      while (read < bytes.length) {
        const n = readSync(fd, bytes, read, bytes.length - read, start + read);
        if (n === 0) break; // shorter than its record says: send what there is
        read += n;
      }
      return read === bytes.length ? bytes : bytes.subarray(0, read);
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Removes a blob; false when it was absent or, with `unlessTouchedAfter`, when a put wrote or
   * deduplicated onto it after that time (a record over it may be about to be committed).
   */
  async delete(key: string, options: { unlessTouchedAfter?: number } = {}): Promise<boolean> {
    const path = this.pathOf(key);
    if (this.#staged.has(key)) return false; // being stored: a record over it is on its way
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

  /** Rejects while the blob directory cannot be read. */
  async check(): Promise<void> {
    await stat(this.root);
  }

  /** Never: this server serves the files itself. */
  async downloadUrl(_key: string, _link: DownloadLink): Promise<null> {
    return null;
  }

  /** Nothing is held open. */
  async close(): Promise<void> {}

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
