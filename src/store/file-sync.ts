// Group fsync: many writers share one fsync of a file, run on libuv's thread pool so the event
// loop keeps serving requests while the disk flushes.
import { open } from "node:fs/promises";

/** What FileSync needs of an open file (a node:fs/promises FileHandle). */
export interface SyncableFile {
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** Coalesces fsyncs of one file: each `sync()` resolves after an fsync that began after the call. */
export class FileSync {
  readonly #handle: SyncableFile;
  /** The fsync under way, if any. */
  #running: Promise<void> | null = null;
  /** The fsync that starts next (at the end of the turn, or when the running one ends); every caller arriving meanwhile shares it. */
  #next: Promise<void> | null = null;
  /**
   * Why an fsync failed, once one has. After a failed fsync the file's state on disk is unknown
   * (the kernel may have dropped the dirty pages), and in a WAL a lost frame voids every later
   * one: no later fsync can make a write durable, so every later sync fails too.
   */
  #failure: { error: unknown } | null = null;

  /** Wraps an open file; see `open` for a path. */
  constructor(handle: SyncableFile) {
    this.#handle = handle;
  }

  /** Opens `path` (which must exist) for syncing. */
  static async open(path: string): Promise<FileSync> {
    // Read-write: some platforms refuse fsync on a descriptor opened read-only.
    return new FileSync(await open(path, "r+"));
  }

  /** The first failed fsync's error, or null while every fsync has succeeded. */
  get failure(): { error: unknown } | null {
    return this.#failure;
  }

  /**
   * Resolves once everything written to the file before this call is on stable storage. The
   * fsync starts once the event loop's turn is over (or once the one under way ends: it may have
   * begun before the caller's write), so the writes of a turn share it: a write that follows
   * another in the same turn (a job's end after its start) costs no fsync of its own.
   */
  sync(): Promise<void> {
    if (this.#failure !== null) return Promise.reject(this.#failure.error);
    if (this.#next !== null) return this.#next;
    const after =
      this.#running === null
        ? new Promise<void>((resolve) => setImmediate(resolve))
        : this.#running.then(
            () => undefined,
            () => undefined,
          );
    const next = after.then(() => {
      this.#next = null;
      return this.#start();
    });
    this.#next = next;
    return next;
  }

  /** Waits for pending fsyncs, then closes the file. */
  async close(): Promise<void> {
    await Promise.allSettled([this.#running, this.#next]);
    await this.#handle.close();
  }

  #start(): Promise<void> {
    if (this.#failure !== null) return Promise.reject(this.#failure.error);
    const running = this.#handle
      .sync()
      .catch((error: unknown) => {
        this.#failure ??= { error };
        throw error;
      })
      .finally(() => {
        if (this.#running === running) this.#running = null;
      });
    this.#running = running;
    return running;
  }
}
