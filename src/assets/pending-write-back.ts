// The restart-time write-back of outputs' kept bytes: a run's end may commit its last outputs'
// records with their bytes kept in the store (transitionJobWithAssets' `pending`) before their
// blob files are durable; when a power loss came between the two, the next start writes those
// bytes back to the blob store, then the store forgets them.
import type { BlobStore } from "../blobs/index.ts";
import { isOutOfSpace } from "../datadir/space.ts";
import type { Store } from "../store/index.ts";

/** The write-back of kept bytes at a start, retried while the blob filesystem is full. */
export class PendingWriteBack {
  private readonly store: Store;
  private readonly blobs: BlobStore;
  /** Kept bytes not written back yet for lack of space, and the timer that tries again. */
  #left = false;
  #retry: NodeJS.Timeout | undefined;

  constructor(store: Store, blobs: BlobStore) {
    this.store = store;
    this.blobs = blobs;
  }

  /** Writes back every kept blob, then forgets them; the count written back. Run at start, before serving. */
  async restore(): Promise<number> {
    let restored = 0;
    for (let page = await this.store.pendingBlobs(); page.length > 0; page = await this.store.pendingBlobs(page[page.length - 1]!.key)) {
      for (const blob of page) if (await this.blobs.restore(blob.key, blob.bytes)) restored++;
      await this.store.dropPendingBlobs(page.map((b) => b.key));
    }
    return restored;
  }

  /**
   * `restore` on a blob filesystem that may be full: then the server starts all the same (not
   * ready: `left`), and the write-back is tried again every `retryMs` until the bytes fit. Any
   * other failure throws, as `restore` does.
   */
  async restoreWhenRoom(retryMs = 1_000, onError: (err: unknown) => void = () => undefined): Promise<void> {
    try {
      await this.restore();
      this.#left = false;
    } catch (err) {
      if (!isOutOfSpace(err)) throw err;
      this.#left = true;
      this.#retry = setTimeout(() => void this.restoreWhenRoom(retryMs, onError).catch(onError), retryMs);
      this.#retry.unref();
    }
  }

  /** Whether kept bytes still wait to be written back (their blob filesystem was full). */
  get left(): boolean {
    return this.#left;
  }

  /** Stops the retried write-back (a stop: the next start tries again). */
  stop(): void {
    clearTimeout(this.#retry);
  }
}
