// POST /api/v2/jobs/{id}/cancel: queued -> canceled, running -> canceling -> canceled,
// terminal jobs unchanged; a terminal state never changes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { databaseKind, delayGraph, expectError, expectValid, imageGraph, startTestServer, v, waitFor, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ flags: ["--concurrency", "1"] });
});
afterAll(async () => {
  await s?.stop();
});

async function cancel(id: string, body?: unknown) {
  const res = await s.api.post(`/api/v2/jobs/${id}/cancel`, body);
  expect(res.status, res.text).toBe(200);
  expectValid(v.response_cancelJob_200, res.body, "cancelJob 200");
  expect(res.body).not.toHaveProperty("logs");
  return res.body;
}

describe("cancel", () => {
  it("CAN-1 CAN-2 ST-3 a running job answers canceling, then reaches canceled", async () => {
    const job = await s.api.submit(delayGraph(30));
    await s.api.waitJob(job.id, (j) => j.status === "running", "running");
    const answer = await cancel(job.id);
    expect(answer.id).toBe(job.id);
    expect(answer.status).toBe("canceling");
    expect(answer.completed_at).toBeNull();
    const end = await s.api.waitTerminal(job.id);
    expect(end.status).toBe("canceled");
    expect(end.error).toBeNull();
    expect(end.completed_at).not.toBeNull();
    expect(end.started_at).not.toBeNull();
    expect(end.metrics.execution_ms).toBe(Date.parse(end.completed_at) - Date.parse(end.started_at));
  });

  it("CAN-2 a sampler is stopped at a step boundary", async () => {
    const workflow = {
      "1": { class_type: "FlowgateSampler", inputs: { seed: Math.floor(Math.random() * 1e9), steps: 10000, width: 64, height: 64 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "c" } },
    };
    const job = await s.api.submit(workflow);
    await s.api.waitJob(job.id, (j) => (j.progress?.step ?? 0) > 0, "some steps");
    expect((await cancel(job.id)).status).toBe("canceling");
    const end = await s.api.waitTerminal(job.id);
    expect(end.status).toBe("canceled");
    expect(end.progress.step).toBeLessThan(10000);
    expect(end.outputs).toEqual([]);
  });

  it("CAN-3 a queued job goes straight to canceled and never runs; positions behind it move up", async () => {
    const blocker = await s.api.submit(delayGraph(30));
    await s.api.waitJob(blocker.id, (j) => j.status === "running", "running");
    const a = await s.api.submit(imageGraph("qa"));
    const b = await s.api.submit(imageGraph("qb"));
    expect(b.queue_position).toBe(1);
    const answer = await cancel(a.id);
    expect(answer.status).toBe("canceled");
    expect(answer.queue_position).toBeNull();
    expect(answer.started_at).toBeNull();
    expect(answer.completed_at).not.toBeNull();
    expect(answer.metrics).toEqual({ queue_ms: null, execution_ms: null });
    expect((await s.api.job(b.id)).queue_position).toBe(0);
    await cancel(blocker.id);
    await s.api.waitTerminal(b.id);
    const after = await s.api.job(a.id);
    expect(after.status).toBe("canceled");
    expect(after.started_at).toBeNull();
    expect(after.outputs).toEqual([]);
  });

  it("CAN-3 ST-4 canceling a terminal job changes nothing and returns it (200)", async () => {
    const ok = await s.api.submit(imageGraph());
    const done = await s.api.waitTerminal(ok.id);
    expect(done.status).toBe("succeeded");
    const again = await cancel(ok.id);
    expect(again.status).toBe("succeeded");
    expect(again.completed_at).toBe(done.completed_at);
    expect(again.outputs.map((o: any) => o.id)).toEqual(done.outputs.map((o: any) => o.id));

    const bad = await s.api.submit({
      "1": { class_type: "LoadImage", inputs: { image: "absent.png" } },
      "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
    });
    const failed = await s.api.waitTerminal(bad.id);
    expect(failed.status).toBe("failed");
    const cf = await cancel(bad.id);
    expect(cf.status).toBe("failed");
    expect(cf.error).toEqual(failed.error);

    const q = await s.api.submit(delayGraph(30));
    await cancel(q.id);
    const canceled = await s.api.waitTerminal(q.id);
    expect((await cancel(q.id)).completed_at).toBe(canceled.completed_at);
  });

  it("ST-4 an output being committed when the cancel lands is in the job before it turns canceled", async () => {
    const assets = s.runtime.assets;
    // An output's bytes being stored (its record follows them, with the run's end at the latest).
    const commit = assets.storeOutput.bind(assets);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inCommit = new Promise<void>((r) => (entered = r));
    let committed: Promise<unknown> = Promise.resolve();
    assets.storeOutput = (job, file) => {
      entered();
      committed = gate.then(() => commit(job, file));
      return committed as ReturnType<typeof commit>;
    };
    const job = await s.api.submit(imageGraph("straggler"));
    const atTerminal: number[] = [];
    const unsubscribe = s.runtime.events.subscribe(job.id, (e) => {
      if (e.type === "status" && ["canceled", "succeeded"].includes(e.job.status)) {
        void s.runtime.store.listJobOutputs(job.id).then((o) => atTerminal.push(o.length));
      }
    });
    try {
      await inCommit;
      expect((await cancel(job.id)).status).toBe("canceling");
      release();
      await committed.catch(() => undefined);
      const end = await s.api.waitTerminal(job.id);
      await waitFor(
        () => atTerminal.length,
        (n) => n === 1,
        "the terminal status",
      );
      const later = await s.api.job(job.id);
      expect(later.status).toBe(end.status);
      // Whatever the run committed is there when the job turns terminal, and nothing after.
      expect(later.outputs.length).toBe(atTerminal[0]);
      expect(later.outputs.length).toBe(end.outputs.length);
    } finally {
      unsubscribe();
      assets.storeOutput = commit;
      release();
    }
  });

  // On SQLite a read sees a commit before its fsync. (On PostgreSQL a claim is visible once it is
  // durable, and the heartbeat stops a run that a cancel moved in the moment before its launch.)
  it.runIf(databaseKind() === "sqlite")("CAN-2 a cancel that reads the job running before its start is durable still stops the run", async () => {
    const store = s.runtime.store;
    const transition = store.transitionJob.bind(store);
    let started!: (id: string) => void;
    const inWindow = new Promise<string>((r) => (started = r));
    let release!: () => void;
    const durable = new Promise<void>((r) => (release = r));
    // The move to running commits (reads show it) and its fsync is slow. (The job may start
    // before its submission is answered.)
    store.transitionJob = async (id, from, to, patch, options) => {
      const moved = await transition(id, from, to, patch, options);
      if (to === "running") {
        started(id);
        await durable;
      }
      return moved;
    };
    try {
      const job = await s.api.submit(delayGraph(30));
      expect(await inWindow).toBe(job.id);
      expect((await s.api.job(job.id)).status).toBe("running");
      expect((await cancel(job.id)).status).toBe("canceling");
      release();
      // The run is stopped at once, not after its 30 s.
      const end = await s.api.waitTerminal(job.id, 5_000);
      expect(end.status).toBe("canceled");
    } finally {
      store.transitionJob = transition;
      release();
    }
  });

  it("concurrent cancels of one running job all answer 200 and it ends canceled once", async () => {
    const job = await s.api.submit(delayGraph(30));
    await s.api.waitJob(job.id, (j) => j.status === "running", "running");
    const answers = await Promise.all(Array.from({ length: 10 }, () => s.api.post(`/api/v2/jobs/${job.id}/cancel`)));
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(["canceling", "canceled"]).toContain(a.body.status);
    }
    expect((await s.api.waitTerminal(job.id)).status).toBe("canceled");
  });

  it("accepts an empty object body and refuses any field", async () => {
    const job = await s.api.submit(delayGraph(30));
    expect((await cancel(job.id, {})).status).toMatch(/^cancel/);
    const res = await s.api.post(`/api/v2/jobs/${job.id}/cancel`, { force: true });
    expectError(res, 400, "invalid_request", v.response_cancelJob_400);
  });
});
