import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { T0, blobKey, newAsset, newJob, openTestStore } from "./helpers.ts";
import type { TestStore } from "./helpers.ts";
import { UnknownJobError } from "../../src/store/index.ts";

let t: TestStore;
beforeEach(async () => {
  t = await openTestStore();
});
afterEach(async () => {
  await t.cleanup();
});

describe("createJob and reads", () => {
  it("stores a queued job and assigns increasing seq", async () => {
    const input = newJob({ deployment_id: "dep-1", cost: 2.5, workflow_id: "wf-7" });
    const first = await t.store.createJob(input);
    expect(first).toEqual({
      id: input.id,
      owner: "alice",
      deployment_id: "dep-1",
      status: "queued",
      seq: first.seq,
      created_at: input.created_at,
      started_at: null,
      completed_at: null,
      expires_at: input.expires_at,
      progress: null,
      error: null,
      output_node_ids: ["2"],
      cost: 2.5,
      metadata: {},
      workflow_id: "wf-7",
      updated_at: input.created_at,
    });
    const second = await t.store.createJob(newJob());
    expect(second.workflow_id).toBeNull();
    expect(second.seq).toBeGreaterThan(first.seq);
    expect(await t.store.getJob(input.id)).toEqual(first);
  });

  it("reports the insert's commit before the insert resolves, with the record reads return from then on", async () => {
    const order: string[] = [];
    let seen: unknown = null;
    let read: Promise<unknown> = Promise.resolve(null);
    const job = await t.store
      .createJob(newJob(), {
        onCommitted: (committed) => {
          order.push("committed");
          seen = committed;
          read = t.store.getJob(committed.id); // asked at once: the row is there from this moment
        },
      })
      .then((created) => {
        order.push("resolved");
        return created;
      });
    expect(order).toEqual(["committed", "resolved"]);
    expect(seen).toEqual(job);
    expect(await read).toEqual(job);
    // A refused insert commits nothing and reports nothing.
    let reported = false;
    await expect(t.store.createJob(newJob({ id: job.id }), { onCommitted: () => void (reported = true) })).rejects.toThrow();
    expect(reported).toBe(false);
  });

  it("keeps the workflow verbatim and apart from the job record", async () => {
    const workflow = { "7": { class_type: "X", inputs: { text: "ünï\u0000code", n: 1.5, list: [1, "2", null], nested: { a: true } }, _meta: { title: "t" } } };
    const job = await t.store.createJob(newJob({ workflow }));
    expect(job).not.toHaveProperty("workflow");
    expect(await t.store.getJobWorkflow(job.id)).toEqual(workflow);
    expect(await t.store.getJobWorkflow("missing")).toBeNull();
  });

  it("answers null for unknown ids", async () => {
    expect(await t.store.getJob("missing")).toBeNull();
    expect(await t.store.getJobLogs("missing")).toBeNull();
  });

  it("answers reads of one moment each with its own record (PostgreSQL reads them in one statement), current as of its call", async () => {
    const a = await t.store.createJob(newJob());
    const b = await t.store.createJob(newJob({ owner: "bob" }));
    const reads = await Promise.all([t.store.getJob(a.id), t.store.getJob(b.id), t.store.getJob(a.id), t.store.getJob("missing"), t.store.getJob(`${a.id}\0`)]);
    expect(reads.map((job) => job?.id ?? null)).toEqual([a.id, b.id, a.id, null, null]);
    expect(reads[0]).toEqual(a);
    expect(reads[1]).toEqual(b);
    expect(reads[2]).toEqual(a);
    expect(reads[0]).not.toBe(reads[2]); // a caller may change its record without touching another's
    // A read asked for while others are out still sees what committed before it was asked for.
    const before = Promise.all(Array.from({ length: 8 }, () => t.store.getJob(a.id)));
    await t.store.transitionJob(a.id, ["queued"], "canceled", { completed_at: T0 });
    const after = await t.store.getJob(a.id);
    await before;
    expect(after).toMatchObject({ id: a.id, status: "canceled", completed_at: T0 });
  });

  it("finds nothing by an id or name holding a NUL character (a path parameter %00)", async () => {
    const job = await t.store.createJob(newJob());
    const nul = `${job.id}\0`;
    expect(await t.store.getJob(nul)).toBeNull();
    expect(await t.store.getJobWorkflow(nul)).toBeNull();
    expect(await t.store.transitionJob(nul, ["queued"], "canceled", { completed_at: T0 })).toBeNull();
    expect(await t.store.getAsset(nul)).toBeNull();
    expect(await t.store.findAssetByName("alice", "a\0.png")).toBeNull();
    expect(await t.store.listJobOutputs(nul)).toEqual([]);
    expect((await t.store.listJobs("alice\0", { limit: 10 })).jobs).toEqual([]);
  });

  it("refuses a duplicate id and malformed input", async () => {
    const job = newJob();
    await t.store.createJob(job);
    await expect(t.store.createJob({ ...job })).rejects.toThrow();
    await expect(t.store.createJob(newJob({ id: "" }))).rejects.toThrow(TypeError);
    await expect(t.store.createJob(newJob({ created_at: 1.5 }))).rejects.toThrow(TypeError);
    await expect(t.store.createJob(newJob({ workflow: [] as never }))).rejects.toThrow(TypeError);
    await expect(t.store.createJob(newJob({ output_node_ids: [1] as never }))).rejects.toThrow(TypeError);
    expect((await t.store.listJobs("alice", { limit: 10 })).jobs).toHaveLength(1);
  });

  it("stores, replaces and clears logs in any status", async () => {
    const job = await t.store.createJob(newJob());
    expect(await t.store.getJobLogs(job.id)).toBeNull();
    const logs = { text: "line 1\nline 2\n", truncated: false, captured_at: T0 + 5 };
    expect(await t.store.setLogs(job.id, logs)).toBe(true);
    expect(await t.store.getJobLogs(job.id)).toEqual(logs);
    await t.store.transitionJob(job.id, ["queued"], "canceled", { completed_at: T0 + 6 });
    const shed = { text: "", truncated: true, captured_at: T0 + 7 };
    expect(await t.store.setLogs(job.id, shed)).toBe(true);
    expect(await t.store.getJobLogs(job.id)).toEqual(shed);
    expect(await t.store.setLogs(job.id, null)).toBe(true);
    expect(await t.store.getJobLogs(job.id)).toBeNull();
    expect(await t.store.setLogs("missing", logs)).toBe(false);
  });
});

describe("durability", () => {
  it("keeps jobs, workflows, logs, assets and claims across close and reopen", async () => {
    const job = await t.store.createJob(newJob(), { idempotency: { key: "k1", now: T0 } });
    const running = await t.store.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 1 });
    await t.store.updateProgress(job.id, { value: 0.5, nodes_done: 1, nodes_total: 2 });
    await t.store.setLogs(job.id, { text: "hi", truncated: false, captured_at: T0 + 2 });
    const asset = await t.store.addAsset(newAsset({ job_id: job.id, node_id: "2", type: "image", tags: ["x"] }));

    const reopened = await t.reopen();
    expect(await reopened.getJob(job.id)).toEqual({ ...running, progress: { value: 0.5, nodes_done: 1, nodes_total: 2 } });
    expect(await reopened.getJobWorkflow(job.id)).toEqual(newJob().workflow);
    expect(await reopened.getJobLogs(job.id)).toEqual({ text: "hi", truncated: false, captured_at: T0 + 2 });
    expect(await reopened.listJobOutputs(job.id)).toEqual([asset]);
    expect(await reopened.getIdempotencyClaim("alice", "k1", T0 + 1)).toMatchObject({ job_id: job.id });
    await expect(reopened.createJob(newJob(), { idempotency: { key: "k1", now: T0 + 1 } })).rejects.toThrow();
  });

  it("never reuses a seq, even after the newest job is deleted and the store reopened", async () => {
    const a = await t.store.createJob(newJob({ expires_at: T0 }));
    const b = await t.store.createJob(newJob({ expires_at: T0 }));
    await t.store.transitionJob(b.id, ["queued"], "canceled", { completed_at: T0 });
    expect((await t.store.purgeExpired(T0 + 1)).job_ids).toEqual([b.id]);
    const reopened = await t.reopen();
    const c = await reopened.createJob(newJob());
    expect(c.seq).toBeGreaterThan(b.seq);
    expect(b.seq).toBeGreaterThan(a.seq);
  });

  it("writes through WAL with foreign keys on", async () => {
    if (t.kind === "sqlite") expect(t.raw().prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
    await expect(t.store.addAsset(newAsset({ job_id: "no-such-job", blob_key: blobKey("b") }))).rejects.toBeInstanceOf(UnknownJobError);
  });
});

describe("expires_at bookkeeping", () => {
  it("keeps integer epoch milliseconds exactly", async () => {
    const job = await t.store.createJob(newJob({ created_at: 8_640_000_000_000_000 - 1, expires_at: 8_640_000_000_000_000 }));
    expect((await t.store.getJob(job.id))?.expires_at).toBe(8_640_000_000_000_000);
  });
});
