// Free space of the data directory's filesystem. A write that fails for space (ENOSPC, EDQUOT,
// SQLITE_FULL, PostgreSQL's disk_full) puts the server in a "short" state: the space reserve is
// released so that the store can still record endings, cancels and deletes; new data (uploads,
// outputs, submissions) is refused with `insufficient_storage` without being tried; dispatch
// pauses; readiness reports it. A probe then watches the filesystem and, once there is room
// again, takes the reserve back and lifts the state by itself (no restart).
import { open, rm, stat, statfs } from "node:fs/promises";
import { join } from "node:path";

/** The reserve file under the data directory. */
export const RESERVE_FILE_NAME = "space-reserve";

/** How often a short server looks at the free space. */
const PROBE_INTERVAL_MS = 1_000;
/** Free space wanted beyond the reserve before the state is lifted. */
const HEADROOM_BYTES = 1024 * 1024;
const CHUNK = Buffer.alloc(1024 * 1024);

/** Refused without trying: the data directory is short of space. */
export class InsufficientStorageError extends Error {
  override readonly name = "InsufficientStorageError";
  constructor(options?: { cause?: unknown }) {
    super("the data directory is out of space", options);
  }
}

/** Whether a failure means the storage is full (or over quota), whoever raised it. */
export function isOutOfSpace(err: unknown): boolean {
  for (let e = err, depth = 0; e !== null && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof InsufficientStorageError) return true;
    const { code, errcode } = e as { code?: unknown; errcode?: unknown };
    // ENOSPC and EDQUOT from the filesystem, SQLITE_FULL (13) from SQLite, 53100 from PostgreSQL.
    if (code === "ENOSPC" || code === "EDQUOT" || code === "53100" || errcode === SQLITE_FULL) return true;
  }
  return false;
}

const SQLITE_FULL = 13;

export interface StorageSpaceOptions {
  dataDir: string;
  /** Bytes kept in the reserve file; 0 keeps none. */
  reserveBytes: number;
  /** Called when the state changes (short or not). */
  onChange?: (short: boolean) => void;
}

/** The short-of-space state of one data directory, its reserve, and the probe that lifts it. */
export class StorageSpace {
  readonly #o: StorageSpaceOptions;
  readonly #reservePath: string;
  #short = false;
  #probe: NodeJS.Timeout | undefined;
  #probing = false;
  #closed = false;

  private constructor(options: StorageSpaceOptions) {
    this.#o = options;
    this.#reservePath = join(options.dataDir, RESERVE_FILE_NAME);
  }

  /** Writes the reserve (a server that cannot, starts short). */
  static async open(options: StorageSpaceOptions): Promise<StorageSpace> {
    const space = new StorageSpace(options);
    if (!(await space.#takeReserve())) space.#enterShort();
    return space;
  }

  /** Whether writes of new data are refused now. */
  get short(): boolean {
    return this.#short;
  }

  /** Throws InsufficientStorageError while short: the caller's write is not even tried. */
  assertRoom(): void {
    if (this.#short) throw new InsufficientStorageError();
  }

  /** Looks at a failed write; one that failed for space makes the directory short. Returns whether it did. */
  noteFailure(err: unknown): boolean {
    if (!isOutOfSpace(err)) return false;
    if (!this.#short) this.#enterShort();
    return true;
  }

  /** Stops the probe (the reserve stays for the next start). */
  close(): void {
    this.#closed = true;
    clearInterval(this.#probe);
  }

  #enterShort(): void {
    this.#short = true;
    // The reserve goes first: its room lets the store record what happens while short.
    void rm(this.#reservePath, { force: true }).catch(() => undefined);
    this.#probe ??= setInterval(() => void this.#check(), PROBE_INTERVAL_MS);
    this.#probe.unref();
    this.#o.onChange?.(true);
  }

  async #check(): Promise<void> {
    if (this.#probing || this.#closed) return;
    this.#probing = true;
    try {
      const fs = await statfs(this.#o.dataDir);
      if (fs.bavail * fs.bsize < this.#o.reserveBytes + HEADROOM_BYTES) return;
      if (!(await this.#takeReserve()) || this.#closed) return;
      clearInterval(this.#probe);
      this.#probe = undefined;
      this.#short = false;
      this.#o.onChange?.(false);
    } catch {
      // Stay short; the next probe looks again.
    } finally {
      this.#probing = false;
    }
  }

  /** Makes the reserve file whole; false (and no partial file) when there is no room for it. */
  async #takeReserve(): Promise<boolean> {
    const size = this.#o.reserveBytes;
    if (size === 0) return true;
    const present = await stat(this.#reservePath).catch(() => null);
    if (present?.size === size) return true;
    try {
      // Real blocks, not a sparse file: the point is to hold the space.
      const file = await open(this.#reservePath, "w");
      try {
        for (let written = 0; written < size; ) {
          const { bytesWritten } = await file.write(CHUNK, 0, Math.min(CHUNK.length, size - written));
          written += bytesWritten;
        }
      } finally {
        await file.close();
      }
      return true;
    } catch (err) {
      await rm(this.#reservePath, { force: true }).catch(() => undefined);
      if (isOutOfSpace(err)) return false;
      throw err;
    }
  }
}

/**
 * The store (or any object of async methods) with every rejection shown to `onFailure` first:
 * the runtime learns of a write that failed for space wherever it happened.
 */
export function watchFailures<T extends object>(target: T, onFailure: (err: unknown) => void): T {
  // Each method becomes an accessor on the instance, set up once: a read costs a getter, not a
  // Proxy trap on every property read (the store sits on every request's path), and a method
  // assigned later (a test's seam) is watched too.
  const table = target as unknown as Record<string, (...args: unknown[]) => unknown>;
  const watch =
    (fn: (...args: unknown[]) => unknown) =>
    (...args: unknown[]) => {
      const result = fn.apply(target, args);
      if (result instanceof Promise) result.catch(onFailure); // before the caller's own handlers
      return result;
    };
  const seen = new Set<string>();
  for (let proto = Object.getPrototypeOf(target); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === "constructor" || seen.has(name)) continue;
      seen.add(name);
      if (typeof Object.getOwnPropertyDescriptor(proto, name)?.value !== "function") continue; // getters stay
      let watched = watch(table[name]!);
      Object.defineProperty(target, name, {
        configurable: true,
        get: () => watched,
        set: (fn: (...args: unknown[]) => unknown) => void (watched = watch(fn)),
      });
    }
  }
  return target;
}
