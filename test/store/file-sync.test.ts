import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSync, type SyncableFile } from "../../src/store/file-sync.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";
import { newAsset, newJob } from "./helpers.ts";

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
  it("gives the callers of one turn one fsync, started once the turn is over", async () => {
    const g = gatedFile();
    const sync = new FileSync(g.file);
    const calls = [sync.sync(), sync.sync()];
    expect(calls[1]).toBe(calls[0]);
    expect(g.began).toHaveLength(0);
    await new Promise((r) => setImmediate(r));
    expect(g.began).toHaveLength(1);
    expect(sync.sync()).not.toBe(calls[0]); // the fsync began: a later write needs another
    g.finish(0);
    await Promise.all(calls);
  });

  it("gives the callers that arrive during an fsync one shared fresh fsync, never the running one", async () => {
    const g = gatedFile();
    const sync = new FileSync(g.file);
    const first = sync.sync();
    await new Promise((r) => setImmediate(r));
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

  it("after a failed fsync fails every later sync with that error", async () => {
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

/** Lets the `i`th fsync finish once it began, and returns what `write` resolves with. */
async function ready<T>(write: Promise<T>, gate: ReturnType<typeof gatedFile>, i: number): Promise<T> {
  for (let n = 0; n < 20 && gate.began.length <= i; n++) await new Promise((r) => setImmediate(r));
  gate.finish(i);
  return write;
}

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

  it("ends a run with its last outputs in one commit and one fsync", async () => {
    const gate = gatedFile();
    const store = await SqliteStore.open({ dataDir: storeDir, openWalSync: async () => new FileSync(gate.file) });
    try {
      const job = await ready(store.createJob(newJob()), gate, 0);
      const running = await ready(store.transitionJob(job.id, ["queued"], "running", { started_at: job.created_at }), gate, 1);
      const outputs = [newAsset({ job_id: job.id }), newAsset({ job_id: job.id })];
      const ended = store.transitionJobWithAssets(running!.id, ["running"], "succeeded", { completed_at: job.created_at + 1 }, outputs);
      // Committed together (a reader sees both at once), acknowledged after one fresh fsync.
      expect((await store.getJob(job.id))?.status).toBe("succeeded");
      expect(await store.listJobOutputs(job.id)).toHaveLength(2);
      expect(await settled(ended)).toBe(false);
      expect(gate.began).toHaveLength(3);
      gate.finish(2);
      expect((await ended)?.assets).toHaveLength(2);
      expect(gate.began).toHaveLength(3);
    } finally {
      for (let i = 0; i < gate.began.length; i++) gate.finish(i);
      await store.close();
    }
  });

  it("a move and a write that follows it in the same turn share one fsync", async () => {
    const gate = gatedFile();
    const store = await SqliteStore.open({ dataDir: storeDir, openWalSync: async () => new FileSync(gate.file) });
    try {
      const job = await ready(store.createJob(newJob()), gate, 0);
      let committed: unknown = "not yet";
      const running = store.transitionJob(job.id, ["queued"], "running", { started_at: job.created_at }, { onCommitted: (j) => (committed = j?.status) });
      // Committed at once, durable later: the end may commit in the same turn.
      expect(committed).toBe("running");
      const ended = store.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: job.created_at + 1 }, [newAsset({ job_id: job.id })]);
      expect(await settled(ended)).toBe(false);
      expect(gate.began).toHaveLength(2);
      gate.finish(1);
      expect((await running)?.status).toBe("running");
      expect((await ended)?.job.status).toBe("succeeded");
      expect(gate.began).toHaveLength(2);
    } finally {
      for (let i = 0; i < gate.began.length; i++) gate.finish(i);
      await store.close();
    }
  });

  it("a progress write waits for no fsync: reads see it at once, and the next durable write's fsync covers it", async () => {
    const gate = gatedFile();
    const store = await SqliteStore.open({ dataDir: storeDir, openWalSync: async () => new FileSync(gate.file) });
    try {
      const job = await ready(store.createJob(newJob()), gate, 0);
      expect(await store.updateProgress(job.id, { value: 0.5, nodes_done: 0, nodes_total: 1 })).toBe(false); // queued: nothing to write
      expect(gate.began).toHaveLength(1);
      await ready(store.transitionJob(job.id, ["queued"], "running", { started_at: job.created_at + 1 }), gate, 1);
      // Resolved while no fsync is under way: a reader never sees a snapshot an fsync behind.
      expect(await store.updateProgress(job.id, { value: 0.25, nodes_done: 0, nodes_total: 1 })).toBe(true);
      expect(await store.updateProgress(job.id, { value: 0.75, nodes_done: 0, nodes_total: 1 })).toBe(true);
      expect((await store.getJob(job.id))?.progress).toEqual({ value: 0.75, nodes_done: 0, nodes_total: 1 });
      expect(gate.began).toHaveLength(2);
    } finally {
      for (let i = 0; i < gate.began.length; i++) gate.finish(i);
      await store.close();
    }
  });
});
