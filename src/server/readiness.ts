// Readiness: whether this server should be sent new work, check by check. GET /readyz answers it,
// and the metrics export it (flowgate_ready, flowgate_readiness_check), with the storage volumes.
import { statfs } from "node:fs/promises";
import type { Runtime } from "./runtime.ts";

/** The checks of readiness, in the order /readyz lists them. */
export const READINESS_CHECKS = ["store", "engine", "queue", "dispatch", "storage"] as const;

export type ReadinessCheck = (typeof READINESS_CHECKS)[number];

/** Each check's result, and whether all pass. */
export async function readiness(runtime: Runtime): Promise<{ ready: boolean; checks: Record<ReadinessCheck, boolean> }> {
  const store = await runtime.store.check().then(() => true, () => false);
  const engine = await runtime.engine.ready().catch(() => false);
  const queue = runtime.dispatcher.queue.size < runtime.config.queueLimit;
  // False once the server is stopping (a load balancer should send new work elsewhere), and
  // while a store write of the dispatcher fails and is retried.
  const dispatch = !runtime.dispatcher.stopping && !runtime.dispatcher.failing;
  // False while the data directory is short of space (new data is refused, dispatch waits).
  const storage = !runtime.space.short;
  const checks = { store, engine, queue, dispatch, storage };
  return { ready: Object.values(checks).every(Boolean), checks };
}

/** Free and total bytes of the data directory's volume and the blobs' (one entry when they share one), and whether the data directory is short of space. */
export async function storageVolumes(runtime: Runtime): Promise<{ short: boolean; volumes: Array<{ volume: string; freeBytes: number; sizeBytes: number }> }> {
  const volumes = [];
  for (const [volume, dir] of [["data", runtime.config.dataDir], ["blobs", runtime.blobs.root]] as const) {
    const fs = await statfs(dir).catch(() => null);
    if (fs !== null) volumes.push({ volume, freeBytes: fs.bavail * fs.bsize, sizeBytes: fs.blocks * fs.bsize });
  }
  return { short: runtime.space.short, volumes };
}
