// A full garbage collection of the calling thread's heap, on request. Tensor storage is shared
// memory (SharedArrayBuffer), which V8 does not weigh when it decides to collect: dead tensors
// of any size stay allocated until something else prompts a collection, and an idle thread never
// collects. The engine asks for one after runs that allocated a lot (shared-storage.ts).
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

type Collect = (options?: { type: "major" | "minor" }) => void;

let collect: Collect | null = null;

/**
 * Collects the calling thread's heap and returns once the dead buffers' memory is freed: V8
 * frees array buffers in a sweep that runs in the background after a collection, and the next
 * collection (a minor one, cheap) first waits for that sweep to finish.
 */
export function fullCollection(): void {
  collect ??= collector();
  collect({ type: "major" });
  collect({ type: "minor" });
}

/** `gc` when the process was started with --expose-gc, otherwise V8's own, obtained once. */
function collector(): Collect {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === "function") return exposed as Collect;
  // V8 installs `gc` in contexts created while the flag is set: one context gets it, and the flag
  // is put back at once so that no other context (the embedder's, a worker's) sees a `gc` global.
  setFlagsFromString("--expose-gc");
  try {
    return runInNewContext("gc") as Collect;
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
}
