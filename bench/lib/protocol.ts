// Messages between the bench (parent) and a server child over the Node IPC channel.
import type { Config } from "../../src/config/config.ts";

/**
 * What the child serves: a bare node:http server answering fixed bytes, a bare node:http SSE
 * server that holds every request open after `firstFrame` (the baselines), a ComfyUI double
 * writing outputs to `outputDir` (bench/lib/comfyui-double.ts), or flowgate.
 */
export type ChildSpec =
  | { kind: "bare"; name: string; bodyBase64: string; contentType: string }
  | { kind: "bare-sse"; name: string; firstFrame: string }
  | { kind: "comfyui-double"; name: string; outputDir: string }
  | { kind: "flowgate"; name: string; dataDir: string; config: Partial<Config> };

/** process.memoryUsage() as sent over IPC. */
export interface MemorySample {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

/** Live counters of a flowgate child. */
export interface ChildCounts {
  /** Jobs that reached a terminal status since the child started. */
  completed: number;
  /** Of those, the ones that did not succeed. */
  unsuccessful: number;
  queued: number;
  running: number;
  /** Open v2 event streams, when the app exposes them. */
  streams: number | null;
  /** The embedded engine's node result cache (its own byte estimate). */
  engineCache: { entries: number; bytes: number } | null;
  /** libvips' operation cache (sharp.cache(): MB held, operations), in this process. */
  vipsCache?: { memoryMB: number; items: number };
}

/** Requests from the parent; each is answered by a Reply with the same id. */
export type ChildRequest =
  | { id: number; op: "mem"; gc: boolean }
  | { id: number; op: "counts" }
  /** Reports (as a `transition` notice) when `jobId` is published with `status`. */
  | { id: number; op: "watch"; jobId: string; status: string }
  /** Cancels every queued job except `keep`, through the job service. */
  | { id: number; op: "cancel-queued"; keep: string[] }
  /** bare-sse: writes each frame to every held stream in turn (one loop per frame), then ends them if asked. Answers BroadcastTimes. */
  | { id: number; op: "broadcast"; frames: string[]; end: boolean }
  /** Writes a V8 heap snapshot (after a GC) to `path`; answers the path. */
  | { id: number; op: "heap-snapshot"; path: string }
  | { id: number; op: "stop" };

export type ChildReply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

/** When a broadcast started and when the event loop was next idle (process.hrtime ns, as strings). */
export interface BroadcastTimes {
  publishedNs: string;
  idleNs: string;
}

/** Unsolicited messages from the child. */
export type ChildNotice =
  | { event: "ready"; url: string; pid: number }
  /**
   * A watched transition was published. tNs: process.hrtime.bigint() at publish; idleNs: when
   * the event loop next reached its check phase (the synchronous fan-out written), as strings.
   */
  | { event: "transition"; jobId: string; status: string; tNs: string; idleNs: string };
