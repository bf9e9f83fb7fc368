// Write-behind of staged blobs (FileBlobStore.stage): bytes a caller keeps in a durable write of
// its own are served from memory here while, in batches, they are written, synced and named.

/** See FileBlobStoreOptions.stageBatchMs. */
export const STAGE_BATCH_MS = 250;
/** Staged bytes, and staged blobs, waiting at most: a batch that reaches either is named at once. */
const STAGE_BATCH_BYTES = 32 * 1024 * 1024;
const STAGE_BATCH_FILES = 64;
/** Staged blobs of a batch being named at once: a batch must leave thread-pool threads to a commit's WAL fsync. */
const STAGE_INSTALLS_AT_ONCE = 2;
/** See FileBlobStoreOptions.stageRetryMs and stageRetainBytes. */
const STAGE_RETRY_MS = 1000;
const STAGE_RETRY_MAX_MS = 60_000;
const STAGE_RETAIN_BYTES = 64 * 1024 * 1024;

/** Timing and memory bounds of the write-behind. */
export interface WriteBehindOptions {
  /** How long a staged blob waits for the others of its batch before it is named (default 250 ms; 0: after the caller's turn). */
  batchMs?: number;
  /** After a staged blob failed to be named, the wait before its next try; it doubles up to 60 s (default 1 s). */
  retryMs?: number;
  /** Bytes of staged blobs that failed to be named kept in memory for their retries (default 64 MiB). */
  retainBytes?: number;
}

/** A staged blob until its file is synced and named. */
export interface Staged {
  bytes: Uint8Array;
  mtimeMs: number;
  /** The first try to name it (see StagedPut.durable); a caller that keeps the bytes until then awaits it. */
  durable: Promise<number | null>;
  /** Set once that try failed: the bytes are served from memory, and this (the next try) is scheduled; calling it tries now. */
  retry: (() => Promise<void>) | null;
}

/** The staged blobs of one store, their batches and their retries. */
export class WriteBehind {
  /** Staged blobs not named yet: reads are served from their bytes. */
  readonly #staged = new Map<string, Staged>();
  readonly #batchMs: number;
  readonly #retryMs: number;
  readonly #retainBytes: number;
  /** Bytes of the staged blobs kept for a retry (see retainBytes). */
  #retainedBytes = 0;
  /** The installs of the staged blobs waiting for their batch, each settling when its blob is named. */
  readonly #batch: (() => Promise<void>)[] = [];
  #batchBytes = 0;
  /** Cancels the pending start of the batch, if one is set. */
  #batchDue: (() => void) | null = null;

  constructor(options: WriteBehindOptions = {}) {
    this.#batchMs = options.batchMs ?? STAGE_BATCH_MS;
    this.#retryMs = options.retryMs ?? STAGE_RETRY_MS;
    this.#retainBytes = options.retainBytes ?? STAGE_RETAIN_BYTES;
  }

  /** The staged blob of `key`, while it is not named. */
  get(key: string): Staged | undefined {
    return this.#staged.get(key);
  }

  has(key: string): boolean {
    return this.#staged.has(key);
  }

  /**
   * Stages `bytes` under `key`: served from memory until `install` (run with its batch) has
   * named them. A failed install keeps them, served, and is tried again later (see #retryLater).
   */
  add(key: string, bytes: Uint8Array, install: () => Promise<number | null>): Staged {
    const entry: Staged = { bytes, mtimeMs: Date.now(), durable: Promise.resolve(null), retry: null };
    this.#staged.set(key, entry);
    entry.durable = this.#inBatch(bytes.byteLength, install).then(
      (writtenAt) => {
        this.#staged.delete(key);
        return writtenAt;
      },
      (error: unknown) => {
        this.#retryLater(key, entry, install, this.#retryMs);
        throw error;
      },
    );
    entry.durable.catch(() => undefined); // the caller's await sees a failure; nobody else must
    return entry;
  }

  /**
   * Keeps a staged blob that failed to be named (an I/O error, a disk full for a moment) in
   * memory, serving reads, and tries again later, backing off; its commit keeps the bytes
   * meanwhile. Past retainBytes it is dropped: reads fail until the next start writes the
   * kept bytes back.
   */
  #retryLater(key: string, entry: Staged, install: () => Promise<number | null>, waitMs: number): void {
    if (this.#staged.get(key) !== entry) return; // named meanwhile (by another try)
    if (entry.retry === null) {
      if (this.#retainedBytes + entry.bytes.byteLength > this.#retainBytes) return void this.#staged.delete(key);
      this.#retainedBytes += entry.bytes.byteLength;
    }
    const attempt = (): Promise<void> => {
      clearTimeout(timer);
      return this.#inBatch(entry.bytes.byteLength, install).then(
        () => {
          if (this.#staged.get(key) !== entry) return;
          this.#retainedBytes -= entry.bytes.byteLength;
          this.#staged.delete(key);
        },
        () => this.#retryLater(key, entry, install, Math.min(waitMs * 2, STAGE_RETRY_MAX_MS)),
      );
    };
    const timer = setTimeout(() => void attempt(), waitMs).unref();
    entry.retry = attempt;
  }

  /** Names every staged blob now, without waiting for its batch; resolves once each is named (or failed). */
  async flush(): Promise<void> {
    const staged = [...this.#staged.values()];
    // Those waiting for a retry are tried again now, once.
    const retries = staged.flatMap((s) => (s.retry === null ? [] : [s.retry()]));
    this.#startBatch();
    await Promise.allSettled([...staged.map((s) => s.durable), ...retries]);
  }

  /** Runs `install` with the next batch of staged blobs; settles as it does. */
  #inBatch<T>(size: number, install: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#batch.push(() => install().then(resolve, reject));
      this.#batchBytes += size;
      const full = this.#batchBytes >= STAGE_BATCH_BYTES || this.#batch.length >= STAGE_BATCH_FILES;
      if (this.#batchDue !== null && !full) return; // its start is set already
      this.#batchDue?.();
      // A full batch starts after the caller's turn, as one of batchMs 0 does.
      const ms = full ? 0 : this.#batchMs;
      if (ms > 0) {
        const timer = setTimeout(() => this.#startBatch(), ms).unref();
        this.#batchDue = () => clearTimeout(timer);
      } else {
        const immediate = setImmediate(() => this.#startBatch());
        this.#batchDue = () => clearImmediate(immediate);
      }
    });
  }

  /** Starts naming the batch waiting, a few blobs at a time. */
  #startBatch(): void {
    this.#batchDue?.();
    this.#batchDue = null;
    const batch = this.#batch.splice(0);
    this.#batchBytes = 0;
    const worker = async (): Promise<void> => {
      for (let next = batch.shift(); next !== undefined; next = batch.shift()) await next();
    };
    for (let i = 0; i < Math.min(STAGE_INSTALLS_AT_ONCE, batch.length); i++) void worker();
  }
}
