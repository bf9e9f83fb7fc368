// The storage volumes as the metrics export them (flowgate_storage_*): the data directory's and
// the blobs', with the space watch's verdict.
import { statfs } from "node:fs/promises";
import { FileBlobStore, InlineBlobs } from "../blobs/index.ts";
import type { Runtime } from "../runtime/runtime.ts";

/**
 * Free and total bytes of the data directory's volume and of the blobs' (the same volume twice
 * when they share one; none for blobs in a bucket), and whether the data directory is short of space.
 */
export async function storageVolumes(runtime: Runtime): Promise<{ short: boolean; volumes: Array<{ volume: string; freeBytes: number; sizeBytes: number }> }> {
  const volumes = [];
  const dirs: Array<[string, string]> = [["data", runtime.config.dataDir]];
  const files = runtime.blobs instanceof InlineBlobs ? runtime.blobs.files : runtime.blobs;
  if (files instanceof FileBlobStore) dirs.push(["blobs", files.root]);
  for (const [volume, dir] of dirs) {
    const fs = await statfs(dir).catch(() => null);
    if (fs !== null) volumes.push({ volume, freeBytes: fs.bavail * fs.bsize, sizeBytes: fs.blocks * fs.bsize });
  }
  return { short: runtime.space.short, volumes };
}
