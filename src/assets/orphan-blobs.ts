// The sweep of orphan blob files: files no asset record and no pending output names, left by a
// crash between an upload's (or an output's) bytes and its record. Only files older than a safe
// age go: a younger one may be a write whose record is on its way, and a put of the same bytes
// touches the file (BlobStore.delete's unlessTouchedAfter keeps it then).
import type { BlobStore } from "../blobs/index.ts";
import type { Store } from "../store/index.ts";

/** How old an unnamed blob file must be before the sweep removes it: far beyond any write's path from bytes to record. */
export const ORPHAN_MIN_AGE_MS = 60 * 60_000;

/** Keys checked against the store per query. */
const BATCH = 500;

export interface OrphanSweepOptions {
  store: Store;
  blobs: BlobStore;
  /** Files touched more recently than this are kept (default ORPHAN_MIN_AGE_MS). */
  minAgeMs?: number;
}

/** One pass over every blob file; the number removed. */
export async function sweepOrphanBlobs(o: OrphanSweepOptions): Promise<number> {
  // File times are wall-clock, whatever clock the service runs on.
  const olderThan = Date.now() - (o.minAgeMs ?? ORPHAN_MIN_AGE_MS);
  let removed = 0;
  const check = async (keys: string[]): Promise<void> => {
    const used = await o.store.blobsInUse(keys);
    const unnamed = keys.filter((key) => !used.has(key));
    if (unnamed.length === 0) return;
    // Read again once the batch is listed, in one query (not one per file: a store shared with
    // files of another database's would cost a transaction each): named since is kept, and so is
    // a file a put of the same bytes touched (delete's unlessTouchedAfter).
    const since = await o.store.blobsInUse(unnamed);
    for (const key of unnamed) if (!since.has(key) && (await o.blobs.delete(key, { unlessTouchedAfter: olderThan }))) removed++;
  };
  let batch: string[] = [];
  for await (const key of o.blobs.keys()) {
    batch.push(key);
    if (batch.length >= BATCH) {
      await check(batch);
      batch = [];
    }
  }
  if (batch.length > 0) await check(batch);
  return removed;
}
