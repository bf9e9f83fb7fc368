// The job service over a real SQLite store in memory and a scripted engine: submission and its
// refusals (as ServiceErrors with contract codes), reads limited to the caller's jobs, cancel of a
// finished job, a run's failure as the job's error, and outputs that are committed, readable and
// published while the run goes on.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Caller } from "../../src/domain/caller.ts";
import { ServiceError } from "../../src/domain/errors.ts";
import { WORKFLOW_FAILED } from "../../src/domain/failures.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { engineAdapter } from "../../src/jobs/engine-adapter.ts";
import type { RunOptions } from "../../src/jobs/engine-port.ts";
import type { JobEvent } from "../../src/jobs/event-bus.ts";
import { openJobSystem, type JobSystem } from "../fixtures/job-system.ts";
import { ScriptedEngine, textOutput } from "../fixtures/scripted-engine.ts";

const alice: Caller = { owner: "alice" };
const bob: Caller = { owner: "bob" };
const graph = { "9": { class_type: "SaveImage", inputs: {} } };

let s: JobSystem;
afterEach(() => s.close());

/** The ServiceError a promise rejects with. */
async function refusal(p: Promise<unknown>): Promise<ServiceError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
}

describe("JobService: submit", () => {
  beforeEach(async () => {
    s = await openJobSystem({
      concurrency: 1,
      queueLimit: 2,
      engine: new ScriptedEngine({
        validate: (g) =>
          Object.hasOwn(g, "bad")
            ? { ok: false, node_errors: { bad: [{ field: "class_type", reason: "unknown_class" }] } }
            : { ok: true, output_node_ids: Object.keys(g) },
      }),
    });
  });

  it("records a valid job queued, with its output nodes and its place in the queue", async () => {
    const first = await s.jobs.submit(alice, { workflow: graph });
    expect(first.job).toMatchObject({ owner: "alice", output_node_ids: ["9"] });
    expect(first.queue_position).toBe(0);
    await s.engine.started(first.job.id);
    const second = await s.jobs.submit(alice, { workflow: graph });
    expect(second.job.status).toBe("queued");
    expect(second.queue_position).toBe(0);
    expect((await s.jobs.get(alice, second.job.id)).queue_position).toBe(0);
  });

  it("refuses an invalid graph (invalid_workflow, with the node errors) and a UI export (workflow_format_ui), recording nothing", async () => {
    const invalid = await refusal(s.jobs.submit(alice, { workflow: { bad: { class_type: "Nope", inputs: {} } } }));
    expect(invalid.code).toBe("invalid_workflow");
    expect(invalid.details).toEqual({ node_errors: { bad: [{ field: "class_type", reason: "unknown_class" }] } });
    expect((await refusal(s.jobs.submit(alice, { workflow: { nodes: [], links: [] } }))).code).toBe("workflow_format_ui");
    expect((await s.jobs.list(alice, { limit: 10 })).jobs).toEqual([]);
  });

  it("refuses a job beyond the queue's bound with queue_full and a Retry-After", async () => {
    const running = await s.jobs.submit(alice, { workflow: graph });
    await s.engine.started(running.job.id);
    await s.jobs.submit(alice, { workflow: graph });
    await s.jobs.submit(alice, { workflow: graph });
    const full = await refusal(s.jobs.submit(bob, { workflow: graph }));
    expect(full.code).toBe("queue_full");
    expect(full.retryAfter).toBeGreaterThanOrEqual(1);
  });

  it("answers a key used again with idempotency_key_reuse, and a key is the owner's own", async () => {
    await s.jobs.submit(alice, { workflow: graph, idempotency_key: "k1" });
    expect((await refusal(s.jobs.submit(alice, { workflow: graph, idempotency_key: "k1" }))).code).toBe("idempotency_key_reuse");
    // Even when the reuse is also invalid: the key decides first.
    expect((await refusal(s.jobs.submit(alice, { workflow: { bad: {} }, idempotency_key: "k1" }))).code).toBe("idempotency_key_reuse");
    expect((await s.jobs.submit(bob, { workflow: graph, idempotency_key: "k1" })).job.owner).toBe("bob");
  });
});

describe("JobService: reads and cancel", () => {
  beforeEach(async () => {
    s = await openJobSystem({ concurrency: 1 });
  });

  it("shows a caller only its own jobs: another's is not_found, and absent from its list", async () => {
    const { job } = await s.jobs.submit(alice, { workflow: graph });
    expect((await s.jobs.get(alice, job.id)).job.id).toBe(job.id);
    expect((await refusal(s.jobs.get(bob, job.id))).code).toBe("not_found");
    expect((await refusal(s.jobs.cancel(bob, job.id))).code).toBe("not_found");
    expect((await s.jobs.list(bob, { limit: 10 })).jobs).toEqual([]);
    expect((await s.jobs.list(alice, { limit: 10 })).jobs.map((j) => j.job.id)).toEqual([job.id]);
  });

  it("returns a finished job unchanged on cancel", async () => {
    const { job } = await s.jobs.submit(alice, { workflow: graph });
    (await s.engine.started(job.id)).end({ kind: "succeeded" });
    await s.status(job.id, "succeeded");
    expect((await s.jobs.cancel(alice, job.id)).job.status).toBe("succeeded");
  });
});

describe("JobService: runs", () => {
  beforeEach(async () => {
    s = await openJobSystem({ concurrency: 1 });
  });

  it("ends a job failed with the engine's error (node, class, traceback)", async () => {
    const { job } = await s.jobs.submit(alice, { workflow: graph });
    const error = {
      code: "node_execution_error" as const,
      message: "ImageInvert failed: bad image",
      node_id: "2",
      class_type: "ImageInvert",
      traceback: "Traceback: ...",
    };
    (await s.engine.started(job.id)).end({ kind: "failed", error });
    await s.status(job.id, "failed");
    expect((await s.jobs.get(alice, job.id)).job.error).toEqual(error);
  });

  it("ends a job upstream_error when the engine breaks its promise and throws, not with the workflow's error", async () => {
    s.engine.run = async () => {
      throw new Error("the engine process went away");
    };
    const { job } = await s.jobs.submit(alice, { workflow: graph });
    await s.status(job.id, "failed");
    expect((await s.jobs.get(alice, job.id)).job.error).toMatchObject({ code: "upstream_error" });
  });

  it("ends a job upstream_error, saying why, when the engine's run fails with what it did not mean as the workflow's error", async () => {
    const said: string[] = [];
    await s.close();
    s = await openJobSystem({ concurrency: 1, log: (line) => said.push(line) });
    const { job } = await s.jobs.submit(alice, { workflow: graph });
    (await s.engine.started(job.id)).end({ kind: "failed", error: { ...WORKFLOW_FAILED }, cause: new Error("the backend's definitions could not be read") });
    await s.status(job.id, "failed");
    expect((await s.jobs.get(alice, job.id)).job.error).toMatchObject({ code: "upstream_error" });
    expect(said.find((line) => line.startsWith(`job ${job.id}: ends failed upstream_error:`))).toContain("the backend's definitions could not be read");
  });

  it("an engine that throws what is not a job's error fails its run with that cause (engineAdapter)", async () => {
    const engine = new EmbeddedEngine();
    engine.execute = async () => {
      throw new TypeError("a bug in the backend");
    };
    const end = await engineAdapter(engine).run(graph, { jobId: "j", signal: new AbortController().signal } as unknown as RunOptions);
    expect(end).toMatchObject({ kind: "failed", error: { code: "node_execution_error" }, cause: expect.any(TypeError) });
  });

  it("commits an output while the run goes on: readable and published before the next node, kept with the end", async () => {
    const workflow = { "3": { class_type: "SaveImage", inputs: {} }, "9": { class_type: "SaveImage", inputs: {} } };
    const { job } = await s.jobs.submit(alice, { workflow });
    const run = await s.engine.started(job.id);
    run.callbacks.onStart({ nodes: ["3", "9"], cached: [], steps: {} });
    run.callbacks.onNodeStart({ node_id: "3", class_type: "SaveImage" });
    await run.callbacks.onOutput(textOutput("3", "first.png", "first"));
    run.callbacks.onNodeDone({
      node_id: "3",
      class_type: "SaveImage",
      ui: { images: [{ filename: "first.png", subfolder: "", type: "output" }] },
      cached: false,
    });
    // The run has not ended: its output is already a record of the job.
    const during = await s.jobs.get(alice, job.id);
    expect(during.job.status).toBe("running");
    expect(during.outputs.map((o) => o.name)).toEqual(["first.png"]);
    run.callbacks.onNodeStart({ node_id: "9", class_type: "SaveImage" });
    await run.callbacks.onOutput(textOutput("9", "last.png", "last"));
    run.end({ kind: "succeeded" });
    await s.status(job.id, "succeeded");
    const after = await s.jobs.get(alice, job.id);
    expect(after.outputs.map((o) => o.name).sort()).toEqual(["first.png", "last.png"]);
    // Each output event went out before the end's status, the first before the next node started.
    const mine = s.published.filter((e): e is Exclude<JobEvent, { type: "status" }> => e.type !== "status" && e.job_id === job.id);
    const kinds = mine
      .map((e) => (e.type === "output" ? `output ${e.asset.name}` : e.type === "node_start" ? `start ${e.node_id}` : e.type))
      .filter((k) => k.startsWith("output") || k.startsWith("start"));
    expect(kinds).toEqual(["start 3", "output first.png", "start 9", "output last.png"]);
    const endAt = s.published.findIndex((e) => e.type === "status" && e.job.id === job.id && e.job.status === "succeeded");
    const lastOutputAt = s.published.findIndex((e) => e.type === "output" && e.asset.name === "last.png");
    expect(lastOutputAt).toBeGreaterThanOrEqual(0);
    expect(lastOutputAt).toBeLessThan(endAt);
  });
});
