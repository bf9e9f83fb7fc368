import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore, UnknownJobError } from "../../src/store/index.ts";
import { HOUR, T0, blobKey, newAsset, newJob, openTestStore } from "./helpers.ts";
import type { TestStore } from "./helpers.ts";

let t: TestStore;
beforeEach(async () => {
  t = await openTestStore();
});
afterEach(async () => {
  await t.cleanup();
});

describe("assets", () => {
  it("commits outputs visible at once, in commit order, expiring with their job", async () => {
    const job = await t.store.createJob(newJob({ expires_at: T0 + 7 * 24 * HOUR }));
    await t.store.transitionJob(job.id, ["queued"], "running", { started_at: T0 });
    const first = await t.store.addAsset(newAsset({ job_id: job.id, node_id: "9", type: "image", hash: `blake3:${blobKey("1")}`, blob_key: blobKey("1") }));
    expect(await t.store.listJobOutputs(job.id)).toEqual([first]);
    // Ids are random, so commit order must come from the store, not from sorting ids.
    const later = [];
    for (let i = 0; i < 5; i++) later.push(await t.store.addAsset(newAsset({ job_id: job.id, node_id: "9", type: "image" })));
    expect((await t.store.listJobOutputs(job.id)).map((a) => a.id)).toEqual([first, ...later].map((a) => a.id));
    expect(first).toMatchObject({ job_id: job.id, node_id: "9", type: "image", folder: "output", tags: [], file_path: null, expires_at: job.expires_at });
    expect(await t.store.listJobOutputs("other")).toEqual([]);
  });

  it("reads the outputs of a page of jobs in one call, each job's in commit order", async () => {
    const jobs = [];
    for (let i = 0; i < 3; i++) {
      const job = await t.store.createJob(newJob());
      await t.store.transitionJob(job.id, ["queued"], "running", { started_at: T0 });
      jobs.push(job);
    }
    const [a, b, empty] = jobs as [(typeof jobs)[0], (typeof jobs)[0], (typeof jobs)[0]];
    // Interleaved commits: each job's list must keep its own order.
    const committed = [];
    for (let i = 0; i < 6; i++) committed.push(await t.store.addAsset(newAsset({ job_id: (i % 2 === 0 ? a : b).id, node_id: String(i), type: "image" })));
    const unknown = "0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42";
    const byJob = await t.store.listOutputsOfJobs([b.id, a.id, empty.id, unknown, a.id]);
    expect([...byJob.keys()]).toEqual([b.id, a.id, empty.id, unknown]);
    for (const job of [a, b, empty]) expect(byJob.get(job.id)).toEqual(await t.store.listJobOutputs(job.id));
    expect(byJob.get(a.id)!.map((o) => o.node_id)).toEqual(["0", "2", "4"]);
    expect(byJob.get(b.id)!.map((o) => o.node_id)).toEqual(["1", "3", "5"]);
    expect(byJob.get(unknown)).toEqual([]);
    expect(await t.store.listOutputsOfJobs([])).toEqual(new Map());
    await expect(t.store.listOutputsOfJobs(Array.from({ length: 1001 }, (_, i) => `j${i}`))).rejects.toThrow(RangeError);
  });

  it("keeps every field of an upload, with its own expiry", async () => {
    const upload = newAsset({
      folder: "input",
      name: "cat.png",
      file_path: "pets/cat.png",
      tags: ["pets", "input"],
      expires_at: T0 + HOUR,
      hash: `blake3:${blobKey("c")}`,
      blob_key: blobKey("c"),
    });
    const stored = await t.store.addAsset(upload);
    expect(stored).toEqual({ ...upload, job_id: null, node_id: null, type: null });
    expect(await t.store.getAsset(upload.id)).toEqual(stored);
    expect(await t.store.getAsset("missing")).toBeNull();
  });

  it("refuses an output of an unknown job and malformed records", async () => {
    await expect(t.store.addAsset(newAsset({ job_id: "nope" }))).rejects.toBeInstanceOf(UnknownJobError);
    await expect(t.store.addAsset(newAsset({ blob_key: "A".repeat(64) }))).rejects.toThrow(TypeError);
    await expect(t.store.addAsset(newAsset({ blob_key: "../etc" }))).rejects.toThrow(TypeError);
    await expect(t.store.addAsset(newAsset({ size_bytes: -1 }))).rejects.toThrow(TypeError);
    await expect(t.store.addAsset(newAsset({ folder: "elsewhere" as never }))).rejects.toThrow(/CHECK/);
    await expect(t.store.addAsset(newAsset({ type: "pdf" as never }))).rejects.toThrow(/CHECK/);
  });

  it("finds an owner's asset over a blob, never another owner's", async () => {
    const older = await t.store.addAsset(newAsset({ blob_key: blobKey("d") }));
    const newer = await t.store.addAsset(newAsset({ blob_key: blobKey("d") }));
    await t.store.addAsset(newAsset({ owner: "bob", blob_key: blobKey("e") }));
    expect((await t.store.findAssetByBlob("alice", blobKey("d")))?.id).toBe(newer.id);
    expect(await t.store.findAssetByBlob("alice", blobKey("e"))).toBeNull();
    expect(await t.store.findAssetByBlob("bob", blobKey("d"))).toBeNull();
    expect(older.id).not.toBe(newer.id);
  });

  it("finds the newest asset of an owner by file name, optionally per folder", async () => {
    await t.store.addAsset(newAsset({ name: "x.png", folder: "input", blob_key: blobKey("1") }));
    const output = await t.store.addAsset(newAsset({ name: "x.png", folder: "output", blob_key: blobKey("2") }));
    const temp = await t.store.addAsset(newAsset({ name: "x.png", folder: "temp", blob_key: blobKey("3") }));
    const reupload = await t.store.addAsset(newAsset({ name: "x.png", folder: "input", blob_key: blobKey("4") }));
    expect((await t.store.findAssetByName("alice", "x.png"))?.id).toBe(reupload.id);
    expect((await t.store.findAssetByName("alice", "x.png", "input"))?.id).toBe(reupload.id);
    expect((await t.store.findAssetByName("alice", "x.png", "output"))?.id).toBe(output.id);
    expect((await t.store.findAssetByName("alice", "x.png", "temp"))?.id).toBe(temp.id);
    expect(await t.store.findAssetByName("bob", "x.png")).toBeNull();
    expect(await t.store.findAssetByName("alice", "y.png")).toBeNull();
  });

  it("deletes a record and says when its blob lost its last reference", async () => {
    const a = await t.store.addAsset(newAsset({ blob_key: blobKey("f") }));
    const b = await t.store.addAsset(newAsset({ owner: "bob", blob_key: blobKey("f") }));
    expect(await t.store.blobReferenced(blobKey("f"))).toBe(true);
    expect(await t.store.deleteAsset(a.id)).toEqual({ blob_key: blobKey("f"), blob_unreferenced: false });
    expect(await t.store.getAsset(a.id)).toBeNull();
    expect(await t.store.deleteAsset(a.id)).toBeNull();
    expect(await t.store.deleteAsset(b.id)).toEqual({ blob_key: blobKey("f"), blob_unreferenced: true });
    expect(await t.store.blobReferenced(blobKey("f"))).toBe(false);
  });
});

const bytesOf = (text: string) => new Uint8Array(Buffer.from(text));
async function runningJob() {
  const job = await t.store.createJob(newJob());
  await t.store.transitionJob(job.id, ["queued"], "running", { started_at: T0 });
  return job;
}

describe("pending blobs (bytes kept by a job's end until their files are durable)", () => {
  it("keeps them with the end's records, in one commit, until dropped", async () => {
    const job = await runningJob();
    const records = [newAsset({ job_id: job.id, node_id: "2", type: "image", blob_key: blobKey("1"), hash: `blake3:${blobKey("1")}` })];
    const pending = [
      { key: blobKey("1"), bytes: bytesOf("first") },
      { key: blobKey("2"), bytes: bytesOf("second") },
    ];
    const ended = await t.store.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: T0 + 1 }, records, pending);
    expect(ended?.job.status).toBe("succeeded");
    const kept = await t.store.pendingBlobs();
    expect(kept.map((b) => [b.key, Buffer.from(b.bytes).toString()])).toEqual([
      [blobKey("1"), "first"],
      [blobKey("2"), "second"],
    ]);
    // Paged by key, as the startup restore reads them.
    expect((await t.store.pendingBlobs(blobKey("1"), 1)).map((b) => b.key)).toEqual([blobKey("2")]);
    await t.store.dropPendingBlobs([blobKey("1")]);
    expect((await t.store.pendingBlobs()).map((b) => b.key)).toEqual([blobKey("2")]);
    await t.store.dropPendingBlobs([]);
    await t.store.dropPendingBlobs([blobKey("2"), blobKey("9")]);
    expect(await t.store.pendingBlobs()).toEqual([]);
  });

  it("keeps nothing when the job does not move, and one copy of bytes kept twice", async () => {
    const job = await runningJob();
    const record = () => newAsset({ job_id: job.id, node_id: "2", type: "image", blob_key: blobKey("3") });
    const pending = [{ key: blobKey("3"), bytes: bytesOf("x") }];
    expect(await t.store.transitionJobWithAssets(job.id, ["queued"], "succeeded", { completed_at: T0 + 1 }, [record()], pending)).toBeNull();
    expect(await t.store.pendingBlobs()).toEqual([]);
    expect(await t.store.listJobOutputs(job.id)).toEqual([]);
    const other = await runningJob();
    await t.store.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: T0 + 1 }, [record()], pending);
    await t.store.transitionJobWithAssets(
      other.id,
      ["running"],
      "succeeded",
      { completed_at: T0 + 1 },
      [newAsset({ job_id: other.id, blob_key: blobKey("3") })],
      pending,
    );
    expect((await t.store.pendingBlobs()).map((b) => b.key)).toEqual([blobKey("3")]);
  });

  it("refuses a key that is not blake3 hex before writing anything", async () => {
    const job = await runningJob();
    await expect(
      t.store.transitionJobWithAssets(
        job.id,
        ["running"],
        "succeeded",
        { completed_at: T0 + 1 },
        [newAsset({ job_id: job.id })],
        [{ key: "../etc/passwd", bytes: bytesOf("x") }],
      ),
    ).rejects.toThrow(TypeError);
    expect((await t.store.getJob(job.id))?.status).toBe("running");
  });
});

describe("inline blobs (small outputs' bytes kept by their records, for good)", () => {
  const inlineAsset = (jobId: string, digit: string, text: string, created_at = T0 + 5) =>
    newAsset({ job_id: jobId, node_id: "2", type: "image", blob_key: blobKey(digit), size_bytes: text.length, inline: bytesOf(text), created_at });
  const text = async (key: string) => {
    const row = await t.store.inlineBlob(key);
    return row === null ? null : Buffer.from(row.bytes).toString();
  };

  it("writes the bytes with their record, alone or with a run's end, and reads them back", async () => {
    const job = await runningJob();
    const added = await t.store.addAsset(inlineAsset(job.id, "1", "first"));
    expect(added).not.toHaveProperty("inline");
    expect(await t.store.inlineBlob(blobKey("1"))).toEqual({ bytes: expect.any(Uint8Array), touched_at: T0 + 5 });
    expect(await text(blobKey("1"))).toBe("first");
    // Ends batched together (the same bytes twice: one row) and an end with pending bytes (its own statements).
    const [a, b, c] = [await runningJob(), await runningJob(), await runningJob()];
    const ended = await Promise.all([
      t.store.transitionJobWithAssets(a.id, ["running"], "succeeded", { completed_at: T0 + 9 }, [inlineAsset(a.id, "2", "second", T0 + 6)]),
      t.store.transitionJobWithAssets(b.id, ["running"], "succeeded", { completed_at: T0 + 9 }, [inlineAsset(b.id, "2", "second", T0 + 7)]),
    ]);
    ended.push(
      await t.store.transitionJobWithAssets(
        c.id,
        ["running"],
        "succeeded",
        { completed_at: T0 + 9 },
        [inlineAsset(c.id, "3", "third")],
        [{ key: blobKey("4"), bytes: bytesOf("kept") }],
      ),
    );
    expect(ended.map((e) => e?.assets.length)).toEqual([1, 1, 1]);
    expect(await text(blobKey("2"))).toBe("second");
    expect((await t.store.inlineBlob(blobKey("2")))?.touched_at).toBe(T0 + 7);
    expect(await text(blobKey("3"))).toBe("third");
    expect(await t.store.inlineBlob(blobKey("4"))).toBeNull();
    expect(await t.store.inlineBlobKeys()).toEqual([blobKey("1"), blobKey("2"), blobKey("3")]);
    expect(await t.store.inlineBlobKeys(blobKey("1"), 1)).toEqual([blobKey("2")]);
  });

  it("keeps nothing when the job does not move", async () => {
    const job = await runningJob();
    expect(await t.store.transitionJobWithAssets(job.id, ["queued"], "succeeded", { completed_at: T0 + 1 }, [inlineAsset(job.id, "5", "x")])).toBeNull();
    expect(await t.store.inlineBlob(blobKey("5"))).toBeNull();
    expect(await t.store.inlineBlobKeys()).toEqual([]);
  });

  it("removes bytes only once no record names them and no write touched them after the given time", async () => {
    const job = await runningJob();
    const first = await t.store.addAsset(inlineAsset(job.id, "6", "shared", T0 + 10));
    const second = await t.store.addAsset(inlineAsset(job.id, "6", "shared", T0 + 20));
    expect((await t.store.inlineBlob(blobKey("6")))?.touched_at).toBe(T0 + 20);
    expect(await t.store.dropInlineBlob(blobKey("6"), T0 + 30)).toBe(false); // named
    await t.store.deleteAsset(first.id);
    await t.store.deleteAsset(second.id);
    expect(await t.store.dropInlineBlob(blobKey("6"), T0 + 15)).toBe(false); // touched after
    expect(await t.store.dropInlineBlob(blobKey("6"), T0 + 20)).toBe(true);
    expect(await t.store.inlineBlob(blobKey("6"))).toBeNull();
    expect(await t.store.dropInlineBlob(blobKey("6"), T0 + 20)).toBe(false);
  });

  it("refuses bytes that are not the record's size, and keys that are not blake3 hex", async () => {
    const job = await runningJob();
    await expect(t.store.addAsset({ ...inlineAsset(job.id, "7", "abc"), size_bytes: 4 })).rejects.toThrow(TypeError);
    await expect(
      t.store.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: T0 + 1 }, [
        { ...inlineAsset(job.id, "7", "abc"), inline: "abc" as never },
      ]),
    ).rejects.toThrow(TypeError);
    expect((await t.store.getJob(job.id))?.status).toBe("running");
    expect(await t.store.inlineBlobKeys()).toEqual([]);
    await expect(t.store.inlineBlob("../x")).rejects.toThrow(TypeError);
    await expect(t.store.dropInlineBlob("../x", T0)).rejects.toThrow(TypeError);
  });
});

describe("output name series", () => {
  it("allots output name counters past the series' existing names, never the same one twice, even to two stores at once", async () => {
    const job = await t.store.createJob(newJob());
    await t.store.transitionJob(job.id, ["queued"], "running", { started_at: T0 });
    // The owner's names in the series: the highest counter is 12 (a name of another series, folder or owner does not count).
    for (const name of ["shot_00003_.png", "shot_00012_.png", "shot_00099_.jpg", "shot_x_00500_.png", "shot_0007_.png", "shot_00001_.png.txt"])
      await t.store.addAsset(newAsset({ job_id: job.id, name }));
    await t.store.addAsset(newAsset({ job_id: job.id, name: "shot_00200_.png", folder: "temp" }));
    await t.store.addAsset(newAsset({ job_id: job.id, name: "shot_00300_.png", owner: "bob" }));
    expect(await t.store.allotOutputNames("alice", "output", "shot", ".png", 4)).toBe(13);
    expect(await t.store.allotOutputNames("alice", "output", "shot", ".png", 1)).toBe(17);
    expect(await t.store.allotOutputNames("alice", "temp", "shot", ".png", 1)).toBe(201);
    expect(await t.store.allotOutputNames("bob", "output", "shot", ".png", 2)).toBe(301);
    expect(await t.store.allotOutputNames("alice", "output", "new", "", 3)).toBe(1);
    // Another connection (another process) allots from the same series concurrently: disjoint blocks.
    const other = await t.reopen();
    try {
      const blocks = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? t.store : other).allotOutputNames("alice", "output", "race", ".png", 3).then((first) => [first, first + 1, first + 2]),
        ),
      );
      const counters = blocks.flat();
      expect(new Set(counters).size).toBe(60);
      expect(Math.min(...counters)).toBe(1);
      expect(Math.max(...counters)).toBe(60);
    } finally {
      await other.close();
    }
    expect(() => t.store.allotOutputNames("alice", "output", "shot", ".png", 0)).toThrow(RangeError);
  });
});

describe("turns of periodic tasks", () => {
  it("gives a task's turn to one caller an interval, across connections, and the next once the interval has passed", async () => {
    const other = await openStore(t.options);
    try {
      const EVERY = 600_000;
      const calls = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? t.store : other).takeTurn("sweep", EVERY, T0));
      expect((await Promise.all(calls)).filter(Boolean)).toHaveLength(1);
      expect(await other.takeTurn("sweep", EVERY, T0 + EVERY - 1)).toBe(false);
      expect(await t.store.takeTurn("another task", EVERY, T0 + 1)).toBe(true);
      expect(await other.takeTurn("sweep", EVERY, T0 + EVERY)).toBe(true);
      expect(await t.store.takeTurn("sweep", EVERY, T0 + EVERY + 1)).toBe(false);
    } finally {
      await other.close();
    }
    expect(() => t.store.takeTurn("", 1, T0)).toThrow(TypeError);
    expect(() => t.store.takeTurn("sweep", -1, T0)).toThrow(RangeError);
  });
});
