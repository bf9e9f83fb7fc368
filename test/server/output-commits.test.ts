// A run's outputs and its end: the records of the last output node are written with the run's
// end, in one store write (one durable commit), and go out as events before the end; other outputs
// are written as they come. On SQLite that write also keeps their bytes until their files are
// durable; on PostgreSQL the bytes are durable before it (forgetting kept bytes would cost a
// transaction of its own), and other processes hear the outputs in the end's own statement.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JobEvent } from "../../src/jobs/event-bus.ts";
import type { NewAsset, PendingBlob, Store } from "../../src/store/index.ts";
import { blobStored, databaseKind, imageGraph, outputThenDelayGraph, startTestServer, type TestServer } from "./helpers.ts";

/** Whether the end's write keeps the last outputs' bytes (staged) until their files are durable. */
const staged = databaseKind() === "sqlite";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ flags: ["--concurrency", "1"] });
});
afterAll(async () => {
  await s?.stop();
});

/** Counts the store writes that record a job's outputs, checking each record's blob is stored by then. */
function watchRecords(store: Store, blobs: TestServer["runtime"]["blobs"]) {
  const seen = { alone: [] as string[], withEnd: [] as Array<{ to: string; names: string[]; kept: number; inline: number }>, blobMissing: [] as string[] };
  // Durable: named on disk (a blob is named only once its bytes are synced), or kept by the same
  // commit (staged, or inline: the record carries them).
  const check = async (a: NewAsset, pending: readonly PendingBlob[] = []) => {
    const kept = a.inline != null || pending.some((p) => p.key === a.blob_key);
    if (!kept && !(await blobStored(blobs, a.blob_key))) seen.blobMissing.push(a.name);
  };
  const addAsset = store.addAsset.bind(store);
  const withAssets = store.transitionJobWithAssets.bind(store);
  store.addAsset = async (asset, fence) => {
    await check(asset);
    seen.alone.push(asset.name);
    return addAsset(asset, fence);
  };
  store.transitionJobWithAssets = async (id, from, to, patch, assets, pending, fence) => {
    for (const a of assets) await check(a, pending);
    seen.withEnd.push({ to, names: assets.map((a) => a.name), kept: pending?.length ?? 0, inline: assets.filter((a) => a.inline != null).length });
    return withAssets(id, from, to, patch, assets, pending, fence);
  };
  return {
    seen,
    restore() {
      store.addAsset = addAsset;
      store.transitionJobWithAssets = withAssets;
    },
  };
}

/** Records every job's events from now on: a job may run to its end before its submission's answer arrives. */
function recordEvents(): { of: (jobId: string) => JobEvent[]; stop: () => void } {
  const events: JobEvent[] = [];
  const stop = s.runtime.events.subscribeAll((e) => void events.push(e));
  return { of: (jobId) => events.filter((e) => (e.type === "status" ? e.job.id : e.job_id) === jobId), stop };
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 10));
  expect(await check()).toBe(true);
}

describe("a run's outputs and its end", () => {
  it("writes the last output's record with the end in one store write, and publishes it before the end", async () => {
    const watch = watchRecords(s.runtime.store, s.runtime.blobs);
    try {
      const recorded = recordEvents();
      const job = await s.api.submit(imageGraph("grouped"));
      const done = await s.api.waitTerminal(job.id);
      // A read may show the end a moment before it is durable; its events go out once it is.
      await until(async () => recorded.of(job.id).some((e) => e.type === "status" && e.job.status === "succeeded"));
      recorded.stop();
      const events = recorded.of(job.id);
      expect(done.status).toBe("succeeded");
      expect(done.outputs).toHaveLength(1);
      expect((await fetch(done.outputs[0].url)).status).toBe(200);
      expect(watch.seen.alone).toEqual([]);
      // Its bytes were kept by the end's commit: staged (not yet synced then) on SQLite, inline
      // (for good) on PostgreSQL.
      expect(watch.seen.withEnd).toEqual([{ to: "succeeded", names: [done.outputs[0].name], kept: staged ? expect.any(Number) : 0, inline: staged ? 0 : 1 }]);
      expect(watch.seen.blobMissing).toEqual([]);
      // Once the file is durable the store forgets the kept bytes.
      await until(async () => (await s.runtime.store.pendingBlobs()).length === 0);
      expect(await blobStored(s.runtime.blobs, done.outputs[0].hash.slice("blake3:".length))).toBe(true);
      // Event order is unchanged: the output, its node done, then the end.
      const order = events.map((e) => (e.type === "status" ? `status:${e.job.status}` : e.type === "node_done" ? `node_done:${e.node_id}` : e.type));
      const at = (what: string) => order.indexOf(what);
      expect(at("output")).toBeGreaterThanOrEqual(0);
      expect(at("output")).toBeLessThan(at("node_done:2"));
      expect(at("node_done:2")).toBeLessThan(at("status:succeeded"));
      expect(order.at(-1)).toBe("status:succeeded");
    } finally {
      watch.restore();
    }
  });

  it("writes an output of an output node that is not the last at once, visible while the run goes on", async () => {
    const watch = watchRecords(s.runtime.store, s.runtime.blobs);
    try {
      const job = await s.api.submit(outputThenDelayGraph(30));
      try {
        const early = await s.api.waitJob(job.id, (j) => j.outputs.length > 0, "the first output");
        expect(early.status).toBe("running");
        expect(watch.seen.alone).toEqual([early.outputs[0].name]);
        expect(watch.seen.blobMissing).toEqual([]);
      } finally {
        await s.api.post(`/api/v2/jobs/${job.id}/cancel`);
        expect((await s.api.waitTerminal(job.id)).status).toBe("canceled");
      }
    } finally {
      watch.restore();
    }
  });

  it.runIf(staged)("an end whose write fails otherwise is retried with its records until it lands", async () => {
    const store = s.runtime.store;
    const withAssets = store.transitionJobWithAssets.bind(store);
    let failures = 2;
    store.transitionJobWithAssets = async (id, from, to, patch, assets, pending, fence) => {
      if (failures > 0) {
        failures--;
        throw Object.assign(new Error("disk I/O error"), { code: "ERR_SQLITE_ERROR", errcode: 10 });
      }
      return withAssets(id, from, to, patch, assets, pending, fence);
    };
    try {
      const job = await s.api.submit(imageGraph("retried"));
      const done = await s.api.waitTerminal(job.id);
      expect(done.status).toBe("succeeded");
      expect(done.outputs).toHaveLength(1);
      expect(failures).toBe(0);
      expect((await fetch(done.outputs[0].url)).status).toBe(200);
    } finally {
      store.transitionJobWithAssets = withAssets;
    }
  });

  // Last: the error makes the server short of space (507 to submissions) until its probe finds room.
  it.runIf(staged)("a last record that does not fit fails the job insufficient_storage and leaves neither record nor blob", async () => {
    const store = s.runtime.store;
    const withAssets = store.transitionJobWithAssets.bind(store);
    const refused: string[] = [];
    store.transitionJobWithAssets = async (id, from, to, patch, assets, pending, fence) => {
      if (assets.length > 0) {
        refused.push(...assets.map((a) => a.blob_key));
        throw Object.assign(new Error("database or disk is full"), { code: "ERR_SQLITE_ERROR", errcode: 13 });
      }
      return withAssets(id, from, to, patch, assets, pending, fence);
    };
    try {
      const job = await s.api.submit(imageGraph("no-room"));
      const done = await s.api.waitTerminal(job.id);
      expect(done.status).toBe("failed");
      expect(done.error).toMatchObject({ code: "insufficient_storage", node_id: "2", class_type: "SaveImage" });
      expect(done.outputs).toEqual([]);
      expect(refused).toHaveLength(1);
      expect(await s.runtime.blobs.has(refused[0]!)).toBe(false);
    } finally {
      store.transitionJobWithAssets = withAssets;
    }
  });
});
