// runJob over a real SQLite store with a scripted engine: the progress snapshots of a burst of
// node events (one event-loop turn) are stored by one write, a snapshot's event goes out once it
// is stored (a read never shows less than an event told) and the end waits for the writes under
// way; a start and an end reported in one turn (a ComfyUI's short prompt) are made durable by one fsync.
import { open } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AssetService } from "../../src/assets/asset-service.ts";
import type { EnginePort, RunEnd, RunOptions } from "../../src/jobs/engine-port.ts";
import { EventBus, type JobEvent } from "../../src/jobs/event-bus.ts";
import { RELAYED_PROGRESS_EVERY_MS, runJob } from "../../src/jobs/job-run.ts";
import { OutputNamer } from "../../src/jobs/output-names.ts";
import type { Progress } from "../../src/jobs/progress.ts";
import { FileSync } from "../../src/store/file-sync.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";
import type { JobRecord, JsonObject, Store } from "../../src/store/index.ts";
import { openJobStore, runningJob, type JobStore } from "../fixtures/job-store.ts";
import { ScriptedEngine, textOutput } from "../fixtures/scripted-engine.ts";

let data: JobStore;
let dir: string;
let store: Store;
let job: JobRecord;

beforeEach(async () => {
  data = await openJobStore("job-run");
  ({ dir, store } = data);
  job = await runningJob(store, "job-1", "alice", ["3"]);
});
afterEach(() => data.close());

/** An engine that runs `script` as its run. */
function scriptedEngine(script: (o: RunOptions) => Promise<RunEnd>): EnginePort {
  return new ScriptedEngine({ script: (run) => script(run.callbacks) });
}

const turn = () => new Promise<void>((r) => setImmediate(r));

/** Resolves once `ready()` holds, looking once per event-loop turn. */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await turn();
}

/** What runJob needs, over `on` (a store) and the data dir's blob store. */
function runDeps(on: Store, engine: EnginePort, events: EventBus) {
  const assets =
    on === store ? data.assets : new AssetService({ store: on, blobs: data.blobs, now: Date.now, retentionMs: 3_600_000, maxUploadBytes: 1 << 20 });
  return { store: on, assets, engine, events, now: Date.now, captureLogs: false, logLimitBytes: 1 << 16, names: new OutputNamer(on) };
}

describe("runJob: progress writes", () => {
  it("stores a turn's snapshots with one write, the last one", async () => {
    const writes: JsonObject[] = [];
    const updateProgress = store.updateProgress.bind(store);
    store.updateProgress = async (id, progress) => {
      writes.push(progress!);
      return updateProgress(id, progress);
    };
    const events = new EventBus();
    const published: Progress[] = [];
    events.subscribeAll((e: JobEvent) => void (e.type === "progress" && published.push(e.progress)));
    let stored: unknown = null;
    const engine = scriptedEngine(async (o) => {
      o.onStart({ nodes: ["1", "2", "3"], cached: [], steps: {} });
      for (const [id, cls] of [
        ["1", "EmptyImage"],
        ["2", "ImageInvert"],
      ] as const) {
        o.onNodeStart({ node_id: id, class_type: cls });
        o.onNodeDone({ node_id: id, class_type: cls, ui: null, cached: false });
      }
      o.onNodeStart({ node_id: "3", class_type: "SaveImage" });
      await turn();
      await turn();
      stored = (await store.getJob(job.id))!.progress;
      return { kind: "succeeded" };
    });
    const deps = runDeps(store, engine, events);
    const ended = await runJob(deps, job, {}, new AbortController().signal);
    expect(ended?.status).toBe("succeeded");
    // Six snapshots in one turn (the plan, two starts, two ends, a start): one write of the last,
    // told once it is stored, then the end's.
    expect(writes).toHaveLength(1);
    expect(published).toHaveLength(2);
    expect(stored).toEqual(published[0]);
    expect(published[1]).toMatchObject({ value: 1, nodes_done: 3 });
    expect(stored).toMatchObject({ nodes_done: 2, nodes_total: 3, current_node: "3", current_node_class: "SaveImage" });
    // The end carries the final snapshot.
    expect(ended?.progress).toMatchObject({ value: 1, nodes_done: 3 });
  });
});

describe("runJob: progress written by time where a relay carries the run's events (PostgreSQL)", () => {
  /** Stands for the relay to other processes (a boundary): each write runs with nothing to carry. */
  const relayed = () => {
    const events = new EventBus();
    events.relayTo({ send: () => undefined, flushed: async () => undefined, carry: (write) => write(undefined) });
    return events;
  };
  /** Counts the progress writes, with when each began and what it wrote. */
  const countWrites = () => {
    const at: number[] = [];
    const wrote: Array<Progress | null> = [];
    const updateProgress = store.updateProgress.bind(store);
    store.updateProgress = async (id, progress, fence, notify) => {
      at.push(performance.now());
      wrote.push(progress as Progress | null);
      return updateProgress(id, progress, fence, notify);
    };
    return Object.assign(at, { wrote });
  };

  it("a run shorter than the spacing writes no snapshot: its end carries the final one", async () => {
    const writes = countWrites();
    const events = relayed();
    const published: Progress[] = [];
    events.subscribeAll((e: JobEvent) => void (e.type === "progress" && published.push(e.progress)));
    const engine = scriptedEngine(async (o) => {
      o.onStart({ nodes: ["1", "3"], cached: [], steps: {} });
      o.onNodeStart({ node_id: "1", class_type: "EmptyImage" });
      await turn();
      o.onNodeDone({ node_id: "1", class_type: "EmptyImage", ui: null, cached: false });
      await turn();
      o.onNodeStart({ node_id: "3", class_type: "SaveImage" });
      await turn();
      return { kind: "succeeded" };
    });
    // A spacing no stall of a busy machine reaches between these few turns.
    const ended = await runJob({ ...runDeps(store, engine, events), relayedProgressEveryMs: 600_000 }, job, {}, new AbortController().signal);
    expect(ended?.status).toBe("succeeded");
    expect(writes).toHaveLength(0);
    expect(ended?.progress).toMatchObject({ value: 1, nodes_done: 2 });
    expect(published).toEqual([ended?.progress]);
  });

  it(`a longer run writes its newest snapshot at most every ${RELAYED_PROGRESS_EVERY_MS} ms, the first that long after it began; a failure writes the last before its end`, async () => {
    const writes = countWrites();
    const events = relayed();
    const began = performance.now();
    const engine = scriptedEngine(async (o) => {
      o.onStart({ nodes: ["1", "3"], cached: [], steps: {} });
      o.onNodeStart({ node_id: "1", class_type: "EmptyImage" });
      // Steps reported every turn until two snapshots were written.
      for (let i = 1; writes.length < 2; i++) {
        o.onProgress({ node_id: "1", value: i, max: 1_000_000 });
        await new Promise((r) => setTimeout(r, 5));
      }
      o.onNodeDone({ node_id: "1", class_type: "EmptyImage", ui: null, cached: false });
      o.onNodeStart({ node_id: "3", class_type: "SaveImage" });
      return { kind: "failed", error: { code: "node_execution_error", message: "boom" } };
    });
    const ended = await runJob(runDeps(store, engine, events), job, {}, new AbortController().signal);
    expect(ended?.status).toBe("failed");
    // Spaced by time, not per step (a step every 5 ms): a timer may fire a little before its delay
    // by the clock a busy loop read when it was set, hence half the spacing as the bound.
    const spaced = RELAYED_PROGRESS_EVERY_MS / 2;
    expect(writes[0]! - began).toBeGreaterThanOrEqual(spaced);
    for (let i = 1; i < writes.length - 1; i++) expect(writes[i]! - writes[i - 1]!).toBeGreaterThanOrEqual(spaced);
    // The last snapshot (node 3 started, right before the failure) was written before the failed
    // end, which keeps it: by time it would have come after the run had ended, not at all.
    expect(writes.length).toBeGreaterThanOrEqual(3);
    expect(writes.wrote.at(-1)?.current_node).toBe("3");
    expect(writes.wrote.slice(0, -1).every((p) => p?.current_node === "1")).toBe(true);
    expect((ended?.progress as Progress | null)?.current_node).toBe("3");
  }, 20_000);
});

describe("runJob: progress events follow their writes", () => {
  /** Holds every progress write until the test lets it through, as a slow store would (PostgreSQL). */
  function holdWrites(): Array<() => void> {
    const held: Array<() => void> = [];
    const updateProgress = store.updateProgress.bind(store);
    store.updateProgress = (id, progress, fence) =>
      new Promise<boolean>((resolve, reject) => held.push(() => updateProgress(id, progress, fence).then(resolve, reject)));
    return held;
  }

  /** What the bus told, in order, and for each progress event the value a read right after it showed. */
  function listen(events: EventBus) {
    const told: string[] = [];
    const reads: Array<Promise<[number, number]>> = [];
    events.subscribeAll((e: JobEvent) => {
      if (e.type === "status") told.push(e.job.status);
      if (e.type !== "progress") return;
      told.push(`progress ${e.progress.nodes_done}/${e.progress.nodes_total} ${e.progress.current_node}`);
      reads.push(store.getJob(job.id).then((j) => [e.progress.value, (j!.progress as Progress | null)?.value ?? -1]));
    });
    return { told, reads };
  }

  /** An engine that starts node 1, waits until its snapshot is being written, starts node 2 and ends with `end`. */
  function twoNodes(held: Array<() => void>, end: RunEnd) {
    const state = { done: false };
    const engine = scriptedEngine(async (o) => {
      o.onStart({ nodes: ["1", "2"], cached: [], steps: {} });
      o.onNodeStart({ node_id: "1", class_type: "EmptyImage" });
      await until(() => held.length === 1);
      o.onNodeDone({ node_id: "1", class_type: "EmptyImage", ui: null, cached: false });
      o.onNodeStart({ node_id: "2", class_type: "SaveImage" });
      state.done = true;
      return end;
    });
    return { engine, state };
  }

  it("tells a snapshot once a read shows it; a success waits for the write under way, then ends with the final snapshot", async () => {
    const held = holdWrites();
    const events = new EventBus();
    const { told, reads } = listen(events);
    const { engine, state } = twoNodes(held, { kind: "succeeded" });
    const run = runJob(runDeps(store, engine, events), job, {}, new AbortController().signal);
    await until(() => state.done);
    for (let i = 0; i < 5; i++) await turn();
    // The first write is held: nothing told yet, and the end waits for it.
    expect(told).toEqual([]);
    expect((await store.getJob(job.id))?.status).toBe("running");
    held.shift()!();
    const ended = await run;
    expect(ended?.status).toBe("succeeded");
    // The stored snapshot, then the final one, then the terminal status; the snapshot still
    // waiting (node 2 started) is written by the end, as the final one.
    expect(told).toEqual(["progress 0/2 1", "progress 2/2 null", "succeeded"]);
    expect(held).toHaveLength(0);
    for (const [value, read] of await Promise.all(reads)) expect(read).toBeGreaterThanOrEqual(value);
  });

  it("another end waits for every snapshot reported, each told once stored, before its status", async () => {
    const held = holdWrites();
    const events = new EventBus();
    const { told, reads } = listen(events);
    const { engine, state } = twoNodes(held, { kind: "failed", error: { code: "node_execution_error", message: "boom" } });
    const run = runJob(runDeps(store, engine, events), job, {}, new AbortController().signal);
    await until(() => state.done);
    for (let i = 0; i < 5; i++) await turn();
    expect(told).toEqual([]);
    held.shift()!();
    // The newest snapshot (node 2 started) is written next, and the end waits for it too.
    await until(() => held.length === 1);
    expect(told).toEqual(["progress 0/2 1"]);
    expect((await store.getJob(job.id))?.status).toBe("running");
    held.shift()!();
    const ended = await run;
    expect(ended?.status).toBe("failed");
    expect(told).toEqual(["progress 0/2 1", "progress 1/2 2", "failed"]);
    for (const [value, read] of await Promise.all(reads)) expect(read).toBeGreaterThanOrEqual(value);
    expect((ended?.progress as Progress | null)?.current_node).toBe("2");
  });
});

describe("runJob: a cancel that arrives after the last node", () => {
  it("ends canceled with its final progress, never behind what the stream published (conformance PRG-2)", async () => {
    const events = new EventBus();
    const published: Progress[] = [];
    events.subscribeAll((e: JobEvent) => void (e.type === "progress" && published.push(e.progress)));
    const engine = scriptedEngine(async (o) => {
      o.onStart({ nodes: ["1", "2"], cached: [], steps: {} });
      o.onNodeStart({ node_id: "1", class_type: "EmptyImage" });
      o.onNodeDone({ node_id: "1", class_type: "EmptyImage", ui: null, cached: false });
      await turn();
      await turn();
      o.onNodeStart({ node_id: "2", class_type: "SaveImage" });
      o.onNodeDone({ node_id: "2", class_type: "SaveImage", ui: null, cached: false });
      // The cancel request lands before the run reports its end: the job is canceling.
      await store.transitionJob(job.id, ["running"], "canceling");
      return { kind: "succeeded" };
    });
    const ended = await runJob(runDeps(store, engine, events), job, {}, new AbortController().signal);
    expect(ended?.status).toBe("canceled");
    // Every node ran: the end carries the final snapshot, as a success's does, so no progress the
    // stream published before the end is ahead of the canceled job a client reads.
    expect(ended?.progress).toMatchObject({ value: 1, nodes_done: 2, nodes_total: 2 });
    for (const p of published) expect(p.value).toBeLessThanOrEqual(1);
    expect((await store.getJob(job.id))?.progress).toEqual(ended?.progress);
  });
});

describe("runJob: a start and an end in one turn", () => {
  it("moves the job to running and to its end with one fsync, publishing both in order", async () => {
    let fsyncs = 0;
    const counted = await SqliteStore.open({
      dataDir: join(dir, "counted"),
      openWalSync: async (path) => {
        const handle = await open(path, "r+");
        return new FileSync({
          sync: () => {
            fsyncs++;
            return handle.sync();
          },
          close: () => handle.close(),
        });
      },
    });
    try {
      const now = Date.now();
      const queued = await counted.createJob({ id: "job-2", owner: "alice", created_at: now, expires_at: now + 3_600_000, workflow: {}, output_node_ids: [] });
      const events = new EventBus();
      const statuses: string[] = [];
      events.subscribeAll((e: JobEvent) => void (e.type === "status" && statuses.push(e.job.status)));
      const engine = scriptedEngine(async (o) => {
        o.onRunning();
        o.onStart({ nodes: ["1"], cached: [], steps: {} });
        o.onNodeStart({ node_id: "1", class_type: "PrimitiveString" });
        o.onNodeDone({ node_id: "1", class_type: "PrimitiveString", ui: null, cached: false });
        return { kind: "succeeded" };
      });
      const deps = runDeps(counted, engine, events);
      const before = fsyncs;
      let running = 0;
      const ended = await runJob(deps, queued, {}, new AbortController().signal, { onQueued: () => undefined, onRunning: () => void running++ });
      expect(ended?.status).toBe("succeeded");
      expect(fsyncs - before).toBe(1);
      expect(statuses).toEqual(["running", "succeeded"]);
      expect(running).toBe(1);
      expect((await counted.getJob("job-2"))?.started_at).not.toBeNull();
    } finally {
      await counted.close();
    }
  });
});

describe("runJob: the last output node's outputs are stored while the engine finishes", () => {
  /** A run of node 3 (SaveImage) with two outputs; `engineDone` says when the engine returned. */
  const twoOutputs = (engineDone: () => void) =>
    scriptedEngine(async (o) => {
      o.onStart({ nodes: ["3"], cached: [], steps: {} });
      o.onNodeStart({ node_id: "3", class_type: "SaveImage" });
      await o.onOutput(textOutput("3", "a.png", "first"));
      await o.onOutput(textOutput("3", "b.png", "second"));
      o.onNodeDone({ node_id: "3", class_type: "SaveImage", ui: { images: [{ filename: "a.png", subfolder: "", type: "output" }] }, cached: false });
      engineDone();
      return { kind: "succeeded" };
    });

  it("the engine does not wait for their bytes; the end does, with their records, their events in their places", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const storeOutput = data.assets.storeOutput.bind(data.assets);
    const storing: string[] = [];
    data.assets.storeOutput = async (j, file, options) => {
      storing.push(file.name);
      await held;
      return storeOutput(j, file, options);
    };
    const events = new EventBus();
    const told: string[] = [];
    events.subscribeAll((e: JobEvent) => {
      if (e.type === "output") told.push(`output ${e.asset.name}`);
      else if (e.type === "node_done" || e.type === "status") told.push(e.type === "status" ? e.job.status : e.type);
    });
    let engineReturned = false;
    const deps = {
      ...runDeps(
        store,
        twoOutputs(() => (engineReturned = true)),
        events,
      ),
      endWithOutputs: "inline" as const,
    };
    const ending = runJob(deps, job, {}, new AbortController().signal);
    await until(() => engineReturned);
    // The engine is done; the first output's bytes are still being stored, and the job still runs.
    expect(storing).toEqual(["a.png"]);
    expect((await store.getJob(job.id))!.status).toBe("running");
    release();
    expect((await ending)?.status).toBe("succeeded");
    expect((await store.listJobOutputs(job.id)).map((a) => a.name)).toEqual(["a.png", "b.png"]);
    expect(told).toEqual(["output a.png", "output b.png", "node_done", "succeeded"]);
  });

  it("a run whose last output found no space fails insufficient_storage, though the engine succeeded", async () => {
    const storeOutput = data.assets.storeOutput.bind(data.assets);
    data.assets.storeOutput = async (j, file, options) => {
      if (file.name === "b.png") throw Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
      return storeOutput(j, file, options);
    };
    const deps = {
      ...runDeps(
        store,
        twoOutputs(() => undefined),
        new EventBus(),
      ),
      endWithOutputs: "inline" as const,
    };
    const ended = await runJob(deps, job, {}, new AbortController().signal);
    expect(ended).toMatchObject({ status: "failed", error: { code: "insufficient_storage" } });
  });
});
