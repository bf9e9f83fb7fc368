import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UnknownJobError } from "../../src/store/index.ts";
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

  it("keeps every field of an upload, with its own expiry", async () => {
    const upload = newAsset({ folder: "input", name: "cat.png", file_path: "pets/cat.png", tags: ["pets", "input"], expires_at: T0 + HOUR, hash: `blake3:${blobKey("c")}`, blob_key: blobKey("c") });
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
