// The two bulk loops every large image goes through (filling a new tensor, converting floats to
// the 8-bit frames the encoders take) run on one shared worker thread when the tensor's storage
// is shared (allocFloats/allocBytes allocate it so), in slices so a cancel takes effect between
// them. Storage that is not shared (tensors built by hand) takes the same loop here, yielding.
import { Worker } from "node:worker_threads";
import { cooperate } from "../run-scope.ts";
import type { CollectTask, FillTask, Rgb8Task } from "./pixel-kernels.worker.ts";

/** Values per task: about 10-40 ms of work, the granularity of a cancel. */
const TASK = 1 << 24;
/** Values per inline slice between yields. */
const SLICE = 1 << 20;

type Task = Omit<FillTask, "id"> | Omit<Rgb8Task, "id"> | Omit<CollectTask, "id">;

let worker: Worker | null = null;
let nextId = 1;
const pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();

function kernelWorker(): Worker {
  if (worker) return worker;
  // The worker file has this module's own extension: .ts in a checkout, .js in the built package.
  const ext = import.meta.url.endsWith(".ts") ? "ts" : "js";
  const w = new Worker(new URL(`./pixel-kernels.worker.${ext}`, import.meta.url));
  // Idle, the worker keeps no process alive; with work pending it does (see run()).
  w.unref();
  const fail = (err: Error) => {
    if (worker === w) worker = null;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  w.on("message", (m: { id: number; error: string | null }) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (pending.size === 0) w.unref();
    if (m.error) p.reject(new Error(m.error));
    else p.resolve();
  });
  w.on("error", fail);
  w.on("exit", (code) => fail(new Error(`the pixel worker exited (${code})`)));
  worker = w;
  return w;
}

function run(task: Task): Promise<void> {
  const w = kernelWorker();
  const id = nextId++;
  return new Promise<void>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    w.ref();
    w.postMessage({ ...task, id });
  });
}

function isShared(view: ArrayBufferView): view is ArrayBufferView<SharedArrayBuffer> {
  return typeof SharedArrayBuffer !== "undefined" && view.buffer instanceof SharedArrayBuffer;
}

/** Writes `pattern` over and over across `data` (a whole number of times). */
export async function fillPattern(data: Float32Array, pattern: Float32Array): Promise<void> {
  const n = pattern.length;
  if (isShared(data)) {
    const step = Math.max(n, Math.floor(TASK / n) * n);
    for (let at = 0; at < data.length; at += step) {
      await run({ kind: "fill", dst: data.buffer, offset: data.byteOffset / 4 + at, length: Math.min(step, data.length - at), pattern });
      await cooperate();
    }
    return;
  }
  for (let at = 0; at < data.length; at += n) {
    data.set(pattern, at);
    if (at % SLICE < n) await cooperate();
  }
}

/** Converts `length` floats of `src` from `from` into 8-bit values in `dst` from 0. */
export async function floatsToRgb8(src: Float32Array, from: number, length: number, dst: Uint8Array): Promise<void> {
  if (isShared(src) && isShared(dst)) {
    for (let at = 0; at < length; at += TASK) {
      const count = Math.min(TASK, length - at);
      await run({ kind: "rgb8", src: src.buffer, srcOffset: src.byteOffset / 4 + from + at, length: count, dst: dst.buffer, dstOffset: dst.byteOffset + at });
      await cooperate();
    }
    return;
  }
  for (let at = 0; at < length; at += SLICE) {
    const end = Math.min(length, at + SLICE);
    for (let i = at; i < end; i++) {
      const v = 255 * (src[from + i] ?? 0);
      // NaN becomes 0, as numpy's uint8 cast of a NaN is platform-defined and 0 is the safe choice.
      dst[i] = v >= 255 ? 255 : v > 0 ? v | 0 : 0;
    }
    await cooperate();
  }
}

/**
 * Has the pixel worker collect its heap, dropping its handles on storage it worked on (tensors the
 * main thread no longer uses stay allocated while the worker holds one). Nothing without a worker.
 */
export function collectPixelWorker(): Promise<void> {
  return worker ? run({ kind: "collect" }) : Promise.resolve();
}
