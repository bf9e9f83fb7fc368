// Held output records over a real store and blob store: written when the run goes on (flush) or
// after their wait, each once; handed to the end, written there or dropped with the blobs that
// only they used; a record a flush cannot write is kept as the run's failure.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AssetService } from "../../src/assets/asset-service.ts";
import type { FileBlobStore } from "../../src/blobs/index.ts";
import { OutputRows } from "../../src/jobs/output-rows.ts";
import type { JobRecord, Store } from "../../src/store/index.ts";
import { openJobStore, runningJob, type JobStore } from "../fixtures/job-store.ts";

let data: JobStore;
let store: Store;
let blobs: FileBlobStore;
let assets: AssetService;
let job: JobRecord;

beforeEach(async () => {
  data = await openJobStore("rows");
  ({ store, blobs, assets } = data);
  job = await runningJob(store, "job-1", "alice", ["9"]);
});
afterEach(() => data.close());

const node = { node_id: "9", class_type: "SaveImage" };
const stored = (text: string) =>
  assets.storeOutput(job, { node_id: "9", name: `${text}.png`, type: "image", content_type: "image/png", data: Buffer.from(text), folder: "output" });

describe("OutputRows", () => {
  it("writes held records when the run goes on, once each, in order", async () => {
    const rows = new OutputRows(assets, 60_000);
    const a = rows.hold(await stored("a"), node);
    const b = rows.hold(await stored("b"), node);
    expect(await store.listJobOutputs(job.id)).toEqual([]);
    rows.flush();
    rows.flush();
    expect([(await a)?.name, (await b)?.name]).toEqual(["a.png", "b.png"]);
    await rows.idle();
    expect((await store.listJobOutputs(job.id)).map((o) => o.name)).toEqual(["a.png", "b.png"]);
    expect(rows.takeForEnd().stored).toEqual([]);
    expect(rows.failure).toBeNull();
  });

  it("writes a held record by itself when the run neither goes on nor ends within the wait", async () => {
    const rows = new OutputRows(assets, 10);
    const a = await rows.hold(await stored("late"), node);
    expect(a?.name).toBe("late.png");
    expect(await store.listJobOutputs(job.id)).toHaveLength(1);
  });

  it("hands what is still held to the end, which writes it, or drops it with the blob only it used", async () => {
    const rows = new OutputRows(assets, 60_000);
    const kept = rows.hold(await stored("kept"), node);
    const end = rows.takeForEnd();
    const ended = await store.transitionJobWithAssets(
      job.id,
      ["running"],
      "succeeded",
      { completed_at: Date.now() },
      end.stored.map((s) => s.record),
    );
    await end.done(ended!.assets);
    expect((await kept)?.id).toBe(ended!.assets[0]!.id);

    const other = new OutputRows(assets, 60_000);
    const lost = await stored("lost");
    const dropped = other.hold(lost, node);
    await other.takeForEnd().done(null);
    expect(await dropped).toBeNull();
    expect(await blobs.has(lost.put.key)).toBe(false);
  });

  it("keeps the first record a flush could not write as the failure", async () => {
    const rows = new OutputRows(assets, 60_000);
    const a = await stored("orphan");
    await store.transitionJob(job.id, ["running"], "failed", { completed_at: Date.now(), error: { code: "x", message: "y" } });
    await store.purgeExpired(Date.now() + 7_200_000); // the job is gone: its records have nothing to point at
    const written = rows.hold(a, node);
    rows.flush();
    expect(await written).toBeNull();
    await rows.idle();
    expect(rows.failure?.node).toEqual(node);
    expect(await blobs.has(a.put.key)).toBe(false); // the blob it alone used went with it
  });
});
