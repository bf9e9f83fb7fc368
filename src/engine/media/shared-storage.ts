// Returning dead tensor storage to the system. Tensors live in shared memory (SharedArrayBuffer,
// for the pixel worker), which V8 frees only when every thread that touched a buffer has
// collected its handle, and whose size does not prompt a collection on either thread: without
// help, each large job left its tensors allocated (about 240 MB of RSS per 4096x4096 output,
// growing job after job). After runs that allocated enough, the engine collects the pixel
// worker's heap, then the main thread's.
import { fullCollection } from "./full-collection.ts";
import { collectPixelWorker } from "./pixel-kernels.ts";

/** Shared bytes allocated since the last release that make the next one worth a full collection. */
export const RELEASE_THRESHOLD = 64 * 2 ** 20;

let allocatedSinceRelease = 0;
let releasing: Promise<void> | null = null;

/** Counts shared storage just allocated (tensors.ts calls it for every tensor). */
export function noteSharedAllocation(bytes: number): void {
  allocatedSinceRelease += bytes;
}

/**
 * Frees the storage of tensors nothing references any more, once RELEASE_THRESHOLD bytes were
 * allocated since the last time (one collection of a small heap is a few milliseconds). Calls
 * made while one runs share it.
 */
export function releaseDeadStorage(): Promise<void> {
  if (releasing) return releasing;
  if (allocatedSinceRelease < RELEASE_THRESHOLD) return Promise.resolve();
  allocatedSinceRelease = 0;
  releasing = (async () => {
    try {
      // The worker first: the main thread's collection frees a buffer only once no thread holds it.
      // A collection that fails leaves the memory as it was; it never fails the run.
      await collectPixelWorker().catch(() => {});
      fullCollection();
    } catch {
      // See above.
    } finally {
      releasing = null;
    }
  })();
  return releasing;
}
