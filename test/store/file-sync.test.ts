import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSync, type SyncableFile } from "../../src/store/file-sync.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";
import { newJob } from "./helpers.ts";

/** A file whose fsyncs finish only when the test says so, counting how many began. */
function gatedFile() {
  const began: Array<() => void> = [];
  const file: SyncableFile = {
    sync: () => new Promise<void>((resolve) => began.push(resolve)),
    close: async () => undefined,
  };
  return { file, began, finish: (i: number) => began[i]!() };
}

const settled = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

describe("FileSync", () => {
  it("gives the callers that arrive during an fsync one shared fresh fsync, never the running one", async () => {
    const g = gatedFile();
    const sync = new FileSync(g.file);
    const first = sync.sync();
    const late = [sync.sync(), sync.sync(), sync.sync()];
    expect(g.began).toHaveLength(1);
    g.finish(0);
    expect(await settled(first)).toBe(true);
    // The late callers may have written after the first fsync began: they wait for a second one.
    expect(await settled(late[0]!)).toBe(false);
    expect(g.began).toHaveLength(2);
    expect(late[1]).toBe(late[0]);
    g.finish(1);
    await Promise.all(late);
    expect(g.began).toHaveLength(2);
  });

  it("starts at once when idle, and after a failed fsync fails every later sync with that error", async () => {
    let calls = 0;
    const file: SyncableFile = {
      sync: async () => {
        calls++;
        if (calls === 2) throw new Error("EIO");
      },
      close: async () => undefined,
    };
    const sync = new FileSync(file);
    await expect(sync.sync()).resolves.toBeUndefined();
    expect(sync.failure).toBeNull();
    await expect(sync.sync()).rejects.toThrow("EIO");
    // A WAL frame that may be lost voids every later one: nothing can be made durable any more.
    await expect(sync.sync()).rejects.toThrow("EIO");
    expect(calls).toBe(2);
    expect(sync.failure).toMatchObject({ error: expect.objectContaining({ message: "EIO" }) });
  });

  let dir: string;
  beforeEach(async () => void (dir = await mkdtemp(join(tmpdir(), "flowgate-fsync-"))));
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it("syncs a real file and closes it after the pending fsyncs", async () => {
    const path = join(dir, "f");
    await writeFile(path, "a");
    const sync = await FileSync.open(path);
    await appendFile(path, "b");
    await Promise.all(Array.from({ length: 20 }, () => sync.sync()));
    const pending = sync.sync();
    await sync.close();
    await pending;
    expect(await readFile(path, "utf8")).toBe("ab");
  });
});

describe("the store's writes wait for the WAL fsync", () => {
  let storeDir: string;
  beforeEach(async () => void (storeDir = await mkdtemp(join(tmpdir(), "flowgate-durable-"))));
  afterEach(async () => rm(storeDir, { recursive: true, force: true }));

  it("resolves a write only after an fsync that began after its commit", async () => {
    const gate = gatedFile();
    const store = await SqliteStore.open({ dataDir: storeDir, openWalSync: async () => new FileSync(gate.file) });
    try {
      const created = store.createJob(newJob());
      // Committed (a second connection would see it) but not yet acknowledged.
      for (let i = 0; i < 20 && gate.began.length === 0; i++) await new Promise((r) => setImmediate(r));
      expect(gate.began).toHaveLength(1);
      expect(await settled(created)).toBe(false);
      gate.finish(0);
      const job = await created;
      const moved = store.transitionJob(job.id, ["queued"], "canceled", { completed_at: job.created_at });
      expect(await settled(moved)).toBe(false);
      expect(gate.began).toHaveLength(2);
      gate.finish(1);
      expect((await moved)?.status).toBe("canceled");
    } finally {
      for (let i = 0; i < gate.began.length; i++) gate.finish(i);
      await store.close();
    }
  });
});
