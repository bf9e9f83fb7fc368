// The bulk pixel loops of media/pixel-kernels.ts, run on a worker thread over tensor storage the
// main thread shares (SharedArrayBuffer): nothing is copied, and the event loop stays free.
import { parentPort } from "node:worker_threads";
import { fullCollection } from "./full-collection.ts";

/** A repeated pattern written over `length` floats from `offset`. */
export interface FillTask {
  id: number;
  kind: "fill";
  dst: SharedArrayBuffer;
  offset: number;
  length: number;
  pattern: Float32Array;
}

/** Floats in 0..1 to 8-bit values, ComfyUI's clip(255 * x) truncated. */
export interface Rgb8Task {
  id: number;
  kind: "rgb8";
  src: SharedArrayBuffer;
  srcOffset: number;
  length: number;
  dst: SharedArrayBuffer;
  dstOffset: number;
}

/**
 * A full collection of this thread's heap: every task left this thread a handle on its tensors'
 * storage, which keeps the memory allocated until this heap is collected, and an idle thread
 * never collects by itself.
 */
export interface CollectTask {
  id: number;
  kind: "collect";
}

parentPort?.on("message", (task: FillTask | Rgb8Task | CollectTask) => {
  try {
    if (task.kind === "collect") fullCollection();
    else if (task.kind === "fill") {
      const dst = new Float32Array(task.dst, task.offset * 4, task.length);
      const n = task.pattern.length;
      dst.set(task.pattern.subarray(0, Math.min(n, task.length)));
      // Doubling copies: log2(length / pattern) native copies instead of a loop over every value.
      for (let filled = n; filled < task.length; filled *= 2) dst.copyWithin(filled, 0, Math.min(filled, task.length - filled));
    } else {
      const src = new Float32Array(task.src, task.srcOffset * 4, task.length);
      const dst = new Uint8Array(task.dst, task.dstOffset, task.length);
      for (let i = 0; i < task.length; i++) {
        const v = 255 * src[i]!;
        // NaN becomes 0, as in tensors.ts.
        dst[i] = v >= 255 ? 255 : v > 0 ? v | 0 : 0;
      }
    }
    parentPort!.postMessage({ id: task.id, error: null });
  } catch (err) {
    parentPort!.postMessage({ id: task.id, error: err instanceof Error ? err.message : String(err) });
  }
});
