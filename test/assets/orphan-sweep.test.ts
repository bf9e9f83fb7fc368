// The orphan sweep's queries (src/assets/orphan-blobs.ts): a store whose files no record names
// (another database's, or a crash's) is read twice per batch of keys, never once per file, and
// only the old unnamed files go.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sweepOrphanBlobs } from "../../src/assets/orphan-blobs.ts";
import { blobPath, FileBlobStore } from "../../src/blobs/index.ts";
import { openStore, type Store } from "../../src/store/index.ts";
import { T0 } from "../store/helpers.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** `store` with a count of each method's calls. */
function counted(store: Store): { store: Store; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.set(String(name), (calls.get(String(name)) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

describe("the orphan blob sweep", () => {
  it("reads the store twice per batch of unnamed files, not once per file, and removes only the old unnamed ones", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "flowgate-sweep-"));
    dirs.push(dataDir);
    const blobs = await FileBlobStore.open(dataDir);
    const store = await openStore({ dataDir });
    try {
      const keys: string[] = [];
      for (let i = 0; i < 1_100; i++) keys.push((await blobs.putBytes(randomBytes(16))).key);
      const [named, old, ...young] = keys;
      const past = new Date(Date.now() - 3 * 3_600_000);
      utimesSync(blobPath(join(dataDir, "blobs"), old!), past, past);
      utimesSync(blobPath(join(dataDir, "blobs"), named!), past, past);
      await store.addAsset({
        id: randomUUID(),
        owner: "",
        name: "in.bin",
        content_type: "application/octet-stream",
        size_bytes: 16,
        blob_key: named!,
        folder: "input",
        created_at: T0,
      });
      const { store: watched, calls } = counted(store);

      expect(await sweepOrphanBlobs({ store: watched, blobs })).toBe(1);
      // Three batches of at most 500 keys, each read, and its unnamed keys read again.
      expect(Object.fromEntries(calls)).toEqual({ blobsInUse: 6 });
      expect(await blobs.has(old!)).toBe(false);
      expect(await blobs.has(named!)).toBe(true);
      for (const key of young) expect(await blobs.has(key)).toBe(true);
    } finally {
      await store.close();
      await blobs.close();
    }
  });
});
