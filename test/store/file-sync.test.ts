import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtemp, readFile, rm, writeFile, appendFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSync, type SyncableFile } from "../../src/store/file-sync.ts";

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
