// The reaper: jobs not terminal at their expires_at become `expired`; past it, jobs, their
// outputs and expired uploads are deleted, and blobs no record refers to are removed.
import type { BlobStore } from "../blobs/index.ts";
import type { Store } from "../store/index.ts";
import type { EventBus } from "./event-bus.ts";
import type { ExpiringJobs } from "./job-queue.ts";

/** Jobs expired per store call. */
const EXPIRE_BATCH = 500;

export interface ReaperOptions {
  store: Store;
  blobs: BlobStore;
  dispatcher: ExpiringJobs;
  events: EventBus;
  now: () => number;
  /** The sweep of orphan blob files, run with each pass (it may skip passes); the number removed. */
  sweepOrphans?: () => Promise<number>;
}

/** One pass of retention; returns how many jobs expired and were purged. */
export async function reapOnce(o: ReaperOptions): Promise<{ expired: number; purged: number; blobs: number; orphans: number }> {
  const now = o.now();
  let expired = 0;
  for (;;) {
    // In bounded batches: a deep queue past its retention must not stall the event loop at once.
    const batch = await o.store.expireJobs(now, EXPIRE_BATCH);
    for (const job of batch) {
      o.dispatcher.dequeue(job.id);
      o.dispatcher.abort(job.id);
      o.events.publish({ type: "status", job });
    }
    expired += batch.length;
    if (batch.length < EXPIRE_BATCH) break;
  }
  let purged = 0;
  let blobs = 0;
  for (;;) {
    const r = await o.store.purgeExpired(now);
    purged += r.job_ids.length;
    for (const key of r.unreferenced_blob_keys) {
      // A blob re-uploaded since this pass began is kept (its new record may not be written yet).
      if (!(await o.store.blobReferenced(key)) && (await o.blobs.delete(key, { unlessTouchedAfter: now }))) blobs++;
    }
    if (!r.more) break;
  }
  const orphans = (await o.sweepOrphans?.()) ?? 0;
  return { expired, purged, blobs, orphans };
}

/** Runs the reaper every `intervalMs` until the returned stop function is called. */
export function startReaper(o: ReaperOptions, intervalMs: number, onError: (err: unknown) => void): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    reapOnce(o)
      .catch(onError)
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
