// The dispatcher of one process over a real SQLite store in memory and a scripted engine: it never
// runs more than its slots (nor more than an owner's), starts jobs first in first out and fairly
// between owners, stops a run a cancel asks to stop, and a stop lets runs finish within its grace,
// aborts the rest and leaves the queue for the next start, which ends what was left running.
import { afterEach, describe, expect, it } from "vitest";
import type { Caller } from "../../src/domain/caller.ts";
import { openJobStore } from "../fixtures/job-store.ts";
import { openJobSystem, type JobSystem } from "../fixtures/job-system.ts";
import { ScriptedEngine } from "../fixtures/scripted-engine.ts";

const alice: Caller = { owner: "alice" };
const bob: Caller = { owner: "bob" };
const graph = { "9": { class_type: "SaveImage", inputs: {} } };

let open: JobSystem[] = [];
async function system(options: Parameters<typeof openJobSystem>[0] = {}): Promise<JobSystem> {
  const s = await openJobSystem(options);
  open.push(s);
  return s;
}
afterEach(async () => {
  for (const s of open.reverse()) await s.close();
  open = [];
});

/** Submits a job as `caller`; its id. */
async function submit(s: JobSystem, caller: Caller = alice): Promise<string> {
  return (await s.jobs.submit(caller, { workflow: graph })).job.id;
}

describe("Dispatcher: slots", () => {
  it("runs at most `concurrency` jobs at once; the end of one starts the next", async () => {
    const s = await system({ concurrency: 2 });
    const ids = [await submit(s), await submit(s), await submit(s), await submit(s)];
    const [first, second] = await Promise.all([s.engine.started(ids[0]), s.engine.started(ids[1])]);
    // Both slots are taken: a fill stops there, so nothing else can start until a run ends.
    expect(s.dispatcher.runningCount).toBe(2);
    expect(s.engine.startOrder).toEqual(ids.slice(0, 2));
    expect((await s.data.store.getJob(ids[2]!))?.status).toBe("queued");
    expect(await s.dispatcher.position(ids[2]!)).toBe(0);
    expect(await s.dispatcher.position(ids[3]!)).toBe(1);

    first.end({ kind: "succeeded" });
    await s.engine.started(ids[2]);
    expect(s.dispatcher.runningCount).toBe(2);
    expect((await s.data.store.getJob(ids[0]!))?.status).toBe("succeeded");
    expect((await s.data.store.getJob(ids[3]!))?.status).toBe("queued");
    second.end({ kind: "succeeded" });
    (await s.engine.started(ids[2])).end({ kind: "succeeded" });
    (await s.engine.started(ids[3])).end({ kind: "succeeded" });
    await s.status(ids[3]!, "succeeded");
    expect(s.engine.startOrder).toEqual(ids);
  });

  it("runs at most an owner's slots of its jobs, leaving a free slot to others (cloud tiers)", async () => {
    const s = await system({ concurrency: 3, slotsFor: async () => 1 });
    const a1 = await submit(s, alice);
    const a2 = await submit(s, alice);
    const b1 = await submit(s, bob);
    await Promise.all([s.engine.started(a1), s.engine.started(b1)]);
    expect(s.dispatcher.runningCount).toBe(2);
    expect((await s.data.store.getJob(a2))?.status).toBe("queued");
    (await s.engine.started(a1)).end({ kind: "succeeded" });
    await s.engine.started(a2);
    expect(s.engine.startOrder).toEqual([a1, b1, a2]);
  });
});

describe("Dispatcher: order", () => {
  it("starts one owner's jobs first in first out", async () => {
    const s = await system({ concurrency: 1 });
    const ids = [await submit(s), await submit(s), await submit(s)];
    for (const id of ids) (await s.engine.started(id)).end({ kind: "succeeded" });
    await s.status(ids[2]!, "succeeded");
    expect(s.engine.startOrder).toEqual(ids);
  });

  it("shares the slots fairly: another owner's job does not wait behind a busy owner's queue", async () => {
    let mayStart = true;
    const s = await system({ concurrency: 2, mayStart: () => mayStart });
    // Alice's first job holds a slot; while starts are held, she queues more, then Bob one.
    const a1 = await submit(s, alice);
    await s.engine.started(a1);
    mayStart = false;
    const a2 = await submit(s, alice);
    const a3 = await submit(s, alice);
    const b1 = await submit(s, bob);
    // Alice runs one job, Bob none: Bob's job is next, ahead of Alice's earlier ones.
    expect(await s.dispatcher.position(b1)).toBe(0);
    expect(await s.dispatcher.position(a2)).toBe(1);
    expect(await s.dispatcher.position(a3)).toBe(2);
    mayStart = true;
    s.dispatcher.pump();
    await s.engine.started(b1);
    expect(s.engine.startOrder).toEqual([a1, b1]);
    expect((await s.data.store.getJob(a2))?.status).toBe("queued");
  });
});

describe("Dispatcher: cancel", () => {
  it("takes a queued job out of the queue: it never runs, and the jobs behind move up", async () => {
    const s = await system({ concurrency: 1 });
    const running = await submit(s);
    const queued = await submit(s);
    const behind = await submit(s);
    const run = await s.engine.started(running);
    expect(await s.dispatcher.position(behind)).toBe(1);
    const canceled = await s.jobs.cancel(alice, queued);
    expect(canceled.job.status).toBe("canceled");
    expect(canceled.queue_position).toBeNull();
    expect(await s.dispatcher.position(behind)).toBe(0);
    run.end({ kind: "succeeded" });
    (await s.engine.started(behind)).end({ kind: "succeeded" });
    await s.status(behind, "succeeded");
    expect(s.engine.startOrder).toEqual([running, behind]);
  });

  it("stops a running job: it answers canceling, its run is aborted, and it ends canceled", async () => {
    const s = await system({ concurrency: 1 });
    const id = await submit(s);
    const run = await s.engine.started(id);
    const answer = await s.jobs.cancel(alice, id);
    expect(answer.job.status).toBe("canceling");
    expect(run.signal.aborted).toBe(true);
    const ended = await s.status(id, "canceled");
    expect(ended.completed_at).not.toBeNull();
    // Its slot is free again: the next job starts.
    const next = await submit(s);
    (await s.engine.started(next)).end({ kind: "succeeded" });
    await s.status(next, "succeeded");
  });

  it("stops a job handed to an engine with its own queue while it still waits there", async () => {
    const s = await system({ concurrency: 1, engine: new ScriptedEngine({ queuesWork: true }) });
    const id = await submit(s);
    const run = await s.engine.started(id);
    run.callbacks.onQueued(3);
    expect(await s.dispatcher.position(id)).toBe(3);
    const answer = await s.jobs.cancel(alice, id);
    expect(answer.job.status).toBe("canceled");
    expect(run.signal.aborted).toBe(true);
    await run.ended;
    await s.dispatcher.stop(60_000); // the run has settled once the stop's drain is over
    expect((await s.data.store.getJob(id))?.status).toBe("canceled");
  });
});

describe("Dispatcher: stop", () => {
  it("lets the runs in flight finish within the grace, starts nothing more, and leaves queued jobs queued", async () => {
    const s = await system({ concurrency: 1 });
    const running = await submit(s);
    const queued = await submit(s);
    const run = await s.engine.started(running);
    const stopped = s.dispatcher.stop(60_000);
    expect(s.dispatcher.stopping).toBe(true);
    expect(run.signal.aborted).toBe(false);
    run.end({ kind: "succeeded" });
    await stopped;
    expect((await s.data.store.getJob(running))?.status).toBe("succeeded");
    expect((await s.data.store.getJob(queued))?.status).toBe("queued");
    expect(s.engine.startOrder).toEqual([running]);
  });

  it("aborts what still runs once the grace is over; the next start ends it worker_lost and runs the queue", async () => {
    const data = await openJobStore("dispatch-restart", { memory: true });
    try {
      const first = await openJobSystem({ concurrency: 1, data });
      const running = await submit(first);
      const queued = await submit(first);
      const run = await first.engine.started(running);
      await first.dispatcher.stop(0);
      expect(run.signal.aborted).toBe(true);
      // Stopped before its end: nothing wrote one, so the job is left for recovery.
      expect((await data.store.getJob(running))?.status).toBe("running");

      const second = await openJobSystem({ concurrency: 1, data });
      try {
        const lost = await data.store.getJob(running);
        expect(lost?.status).toBe("failed");
        expect(lost?.error).toMatchObject({ code: "worker_lost" });
        (await second.engine.started(queued)).end({ kind: "succeeded" });
        await second.status(queued, "succeeded");
      } finally {
        await second.close();
      }
    } finally {
      await data.close();
    }
  });
});
