// Staged outputs over a real SQLite store and blob store: the end's commit keeps the bytes of
// outputs whose files are not durable yet; once they are, the store forgets them; after a power
// loss in between (simulated: the files' fsyncs never finish, the process's state is dropped),
// the next start writes them back before anything reads them.
import { mkdtemp, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AssetService, type StoredOutput } from "../../src/assets/asset-service.ts";
import { PendingWriteBack } from "../../src/assets/pending-write-back.ts";
import { FileBlobStore } from "../../src/blobs/index.ts";
import { openStore, type JobRecord, type Store } from "../../src/store/index.ts";

let dir: string;
let store: Store;
let job: JobRecord;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "flowgate-staged-"));
  store = await openStore({ dataDir: dir });
  const now = Date.now();
  job = await store.createJob({ id: "job-1", owner: "alice", created_at: now, expires_at: now + 3_600_000, workflow: {}, output_node_ids: ["9"] });
  job = (await store.transitionJob(job.id, ["queued"], "running", { started_at: now }))!;
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const service = (blobs: FileBlobStore) => new AssetService({ store, blobs, now: Date.now, retentionMs: 3_600_000, maxUploadBytes: 1 << 20 });
const output = (text: string) => ({
  node_id: "9",
  name: `${text}.png`,
  type: "image" as const,
  content_type: "image/png",
  data: Buffer.from(text),
  folder: "output" as const,
});

/** The job's end with its staged outputs, as a run writes it. */
async function end(outputs: StoredOutput[]) {
  const pending = outputs.flatMap((s) => (s.pending ? [s.pending] : []));
  return store.transitionJobWithAssets(
    job.id,
    ["running"],
    "succeeded",
    { completed_at: Date.now() },
    outputs.map((s) => s.record),
    pending,
  );
}

describe("staged outputs", () => {
  it("are kept by the end's commit and forgotten once their files are durable", async () => {
    const assets = service(await FileBlobStore.open(dir));
    const stored = await assets.storeOutput(job, output("kept"), { stage: true });
    expect(stored.pending?.key).toBe(stored.put.key);
    const ended = await end([stored]);
    expect(ended?.assets).toHaveLength(1);
    await assets.settlePending([stored]);
    expect(await store.pendingBlobs()).toEqual([]);
    expect(existsSync(join(dir, "blobs", stored.put.key.slice(0, 2), stored.put.key.slice(2, 4), stored.put.key))).toBe(true);
  });

  it("a record written by itself (the run went on) waits for its bytes to be durable", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const blobs = await FileBlobStore.open(dir, { syncHook: async (kind, _path, run) => (kind === "file" ? held.then(run) : run()) });
    const assets = service(blobs);
    const stored = await assets.storeOutput(job, output("alone"), { stage: true });
    let written = false;
    const record = assets.recordOutput(stored).then((r) => {
      written = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 30));
    expect(written).toBe(false);
    expect(await store.listJobOutputs(job.id)).toEqual([]);
    release();
    expect((await record).name).toBe("alone.png");
    expect(existsSync(blobs.pathOf(stored.put.key))).toBe(true);
  });

  it("a record written by itself does not wait for its blob's batch", async () => {
    const blobs = await FileBlobStore.open(dir, { stageBatchMs: 60_000 });
    const assets = service(blobs);
    const stored = await assets.storeOutput(job, output("hurried"), { stage: true });
    expect((await assets.recordOutput(stored)).name).toBe("hurried.png");
    expect(existsSync(blobs.pathOf(stored.put.key))).toBe(true);
  });

  it("a clean stop names the staged outputs and forgets their kept bytes", async () => {
    const blobs = await FileBlobStore.open(dir, { stageBatchMs: 60_000 });
    const assets = service(blobs);
    const stored = await assets.storeOutput(job, output("stopping"), { stage: true });
    await end([stored]);
    void assets.settlePending([stored]);
    expect(await store.pendingBlobs()).toHaveLength(1);
    expect(existsSync(blobs.pathOf(stored.put.key))).toBe(false);
    await assets.flushStaged();
    expect(existsSync(blobs.pathOf(stored.put.key))).toBe(true);
    expect(await store.pendingBlobs()).toEqual([]);
  });

  it("a discarded output's blob goes, however long after the put the write-behind wrote its file", async () => {
    const blobs = await FileBlobStore.open(dir, { stageBatchMs: 60_000 });
    const assets = service(blobs);
    const stored = await assets.storeOutput(job, output("refused"), { stage: true });
    // The clock passes the put's time before the file is written (a busy machine's write-behind).
    for (const after = stored.putAt + 2; Date.now() <= after; ) await new Promise((r) => setImmediate(r));
    await assets.discardOutputs([stored]);
    expect(existsSync(blobs.pathOf(stored.put.key))).toBe(false);
  });

  it("a discarded output's blob stays when a put of the same bytes came after its file was written", async () => {
    const blobs = await FileBlobStore.open(dir, { stageBatchMs: 60_000 });
    const assets = service(blobs);
    const stored = await assets.storeOutput(job, output("shared"), { stage: true });
    const writtenAt = await Promise.all([blobs.flushStaged(), stored.durable]).then(([, at]) => at);
    expect(writtenAt).not.toBeNull();
    // Another upload of these bytes, whose record is still on its way, touches the file later.
    for (; Date.now() <= writtenAt! + 1; ) await new Promise((r) => setImmediate(r));
    expect((await blobs.putBytes(Buffer.from("shared"))).created).toBe(false);
    await assets.discardOutputs([stored]);
    expect(existsSync(blobs.pathOf(stored.put.key))).toBe(true);
  });

  it("a discarded output whose bytes another writer stored first leaves that writer's blob", async () => {
    const blobs = await FileBlobStore.open(dir, { stageBatchMs: 60_000 });
    const assets = service(blobs);
    const stored = await assets.storeOutput(job, output("theirs"), { stage: true });
    // Another process names the same bytes before the write-behind does (its own FileBlobStore).
    const other = await FileBlobStore.open(dir);
    expect((await other.putBytes(Buffer.from("theirs"))).created).toBe(true);
    await assets.discardOutputs([stored]);
    expect(await stored.durable).toBeNull();
    expect(existsSync(blobs.pathOf(stored.put.key))).toBe(true);
  });

  it("after a power loss between the end's commit and the files' fsync, the next start writes them back", async () => {
    // The first process: its file fsyncs never finish, so no blob is ever named.
    const stalled = await FileBlobStore.open(dir, { syncHook: (kind, _path, run) => (kind === "file" ? new Promise<void>(() => undefined) : run()) });
    const first = service(stalled);
    const stored = [await first.storeOutput(job, output("one"), { stage: true }), await first.storeOutput(job, output("two"), { stage: true })];
    const ended = await end(stored);
    expect(ended?.job.status).toBe("succeeded");
    for (const s of stored) expect(existsSync(stalled.pathOf(s.put.key))).toBe(false);
    await store.close();

    // The next start, on the same data directory.
    store = await openStore({ dataDir: dir });
    const blobs = await FileBlobStore.open(dir);
    const assets = service(blobs);
    const writeBack = new PendingWriteBack(store, blobs);
    expect(await writeBack.restore()).toBe(2);
    expect(await store.pendingBlobs()).toEqual([]);
    for (const record of await store.listJobOutputs(job.id)) {
      expect(Buffer.from((await assets.contents(record)) as Buffer).toString()).toBe(record.name.replace(".png", ""));
    }
    // Nothing left to do at the start after.
    expect(await writeBack.restore()).toBe(0);
  });
});
