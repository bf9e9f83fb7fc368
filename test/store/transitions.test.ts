import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LeaseLostError, TERMINAL_STATUSES, TerminalStatusError } from "../../src/store/index.ts";
import type { JobRecord, JobStatus } from "../../src/store/index.ts";
import { T0, blobKey, newAsset, newJob, openTestStore } from "./helpers.ts";
import type { TestStore } from "./helpers.ts";

let t: TestStore;
beforeEach(async () => {
  t = await openTestStore();
});
afterEach(async () => {
  await t.cleanup();
});

/** A job driven to `status` through legal moves. */
async function jobIn(status: JobStatus): Promise<JobRecord> {
  const s = t.store;
  const job = await s.createJob(newJob());
  const run = () => s.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 1 });
  switch (status) {
    case "queued":
      return job;
    case "running":
      return (await run())!;
    case "canceling":
      await run();
      return (await s.transitionJob(job.id, ["running"], "canceling"))!;
    case "canceled":
      return (await s.transitionJob(job.id, ["queued"], "canceled", { completed_at: T0 + 2 }))!;
    case "expired":
      return (await s.transitionJob(job.id, ["queued"], "expired", { completed_at: T0 + 2 }))!;
    case "succeeded":
    case "failed":
      await run();
      return (await s.transitionJob(job.id, ["running"], status, {
        completed_at: T0 + 2,
        error: status === "failed" ? { code: "node_execution_error", message: "boom" } : null,
      }))!;
  }
}

describe("a run's fenced writes without leases (one process)", () => {
  const fence = { workerId: null, epoch: 0 };
  it("land while the job is running or canceling, and are refused once it ended", async () => {
    const s = t.store;
    const logs = { text: "hello", truncated: false, captured_at: T0 };
    for (const status of ["running", "canceling"] as const) {
      const job = await jobIn(status);
      await s.addAsset(newAsset({ job_id: job.id, blob_key: blobKey("c") }), fence);
      expect(await s.setLogs(job.id, logs, fence)).toBe(true);
    }
    for (const status of ["queued", "failed", "expired"] as const) {
      const job = await jobIn(status);
      await expect(s.addAsset(newAsset({ job_id: job.id, blob_key: blobKey("c") }), fence)).rejects.toBeInstanceOf(LeaseLostError);
      await expect(s.setLogs(job.id, logs, fence)).rejects.toBeInstanceOf(LeaseLostError);
      expect(await s.listJobOutputs(job.id)).toEqual([]);
    }
  });
});

describe("transitionJob", () => {
  it("moves a job only from one of the given statuses", async () => {
    const job = await t.store.createJob(newJob());
    const running = await t.store.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 10 });
    expect(running).toMatchObject({ status: "running", started_at: T0 + 10, completed_at: null });
    // A second dispatcher racing for the same job loses.
    expect(await t.store.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 11 })).toBeNull();
    expect(await t.store.getJob(job.id)).toEqual(running);
    expect(await t.store.transitionJob("missing", ["queued"], "running", { started_at: T0 })).toBeNull();
    expect(await t.store.transitionJob(job.id, [], "canceled")).toBeNull();
  });

  it("accepts any of several from-statuses", async () => {
    const job = await jobIn("canceling");
    const done = await t.store.transitionJob(job.id, ["running", "canceling"], "canceled", { completed_at: T0 + 3 });
    expect(done).toMatchObject({ status: "canceled", started_at: T0 + 1, completed_at: T0 + 3 });
  });

  it("applies a patch: absent fields stay, null clears", async () => {
    const job = await jobIn("running");
    await t.store.updateProgress(job.id, { value: 0.25, nodes_done: 0, nodes_total: 4 });
    const patched = await t.store.transitionJob(job.id, ["running"], "failed", {
      completed_at: T0 + 5,
      error: { code: "out_of_memory", message: "no memory", node_id: "3" },
      cost: 1.25,
    });
    expect(patched).toMatchObject({
      status: "failed",
      started_at: T0 + 1,
      completed_at: T0 + 5,
      progress: { value: 0.25, nodes_done: 0, nodes_total: 4 },
      error: { code: "out_of_memory", message: "no memory", node_id: "3" },
      cost: 1.25,
    });
    const other = await jobIn("running");
    await t.store.updateProgress(other.id, { value: 1, nodes_done: 4, nodes_total: 4 });
    const cleared = await t.store.transitionJob(other.id, ["running"], "succeeded", { completed_at: T0 + 6, progress: null });
    expect(cleared).toMatchObject({ status: "succeeded", progress: null, error: null });
  });

  it("refuses unknown statuses", async () => {
    const job = await t.store.createJob(newJob());
    await expect(t.store.transitionJob(job.id, ["queued"], "done" as JobStatus)).rejects.toThrow(TypeError);
    await expect(t.store.transitionJob(job.id, ["bogus" as JobStatus], "running")).rejects.toThrow(TypeError);
  });

  it("enforces the timestamps a status implies", async () => {
    const job = await t.store.createJob(newJob());
    await expect(t.store.transitionJob(job.id, ["queued"], "running")).rejects.toThrow(/CHECK/);
    await expect(t.store.transitionJob(job.id, ["queued"], "canceled")).rejects.toThrow(/CHECK/);
    expect((await t.store.getJob(job.id))?.status).toBe("queued");
  });
});

describe("updated_at: the time of the last status change", () => {
  it("is the creation, then each move's time (a cancel request included), and never goes back", async () => {
    const s = t.store;
    const job = await s.createJob(newJob({ created_at: T0 }));
    expect(job.updated_at).toBe(T0);
    expect((await s.getJob(job.id))!.updated_at).toBe(T0);
    expect((await s.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 10 }))!.updated_at).toBe(T0 + 10);
    // A progress snapshot is no status change.
    await s.updateProgress(job.id, { value: 0.5, max: 1 } as never);
    expect((await s.getJob(job.id))!.updated_at).toBe(T0 + 10);
    // A cancel request sets no start or end: its own time says when.
    expect((await s.transitionJob(job.id, ["running"], "canceling", { updated_at: T0 + 30 }))!.updated_at).toBe(T0 + 30);
    expect((await s.getJob(job.id))!.updated_at).toBe(T0 + 30);
    // An end stamped earlier than the request (another process's clock) does not move it back.
    expect((await s.transitionJob(job.id, ["canceling"], "canceled", { completed_at: T0 + 20 }))!.updated_at).toBe(T0 + 30);
  });

  it("is the end of a job the reaper expired, and the latest recorded time of a row written before the column", async () => {
    const s = t.store;
    const job = await s.createJob(newJob({ created_at: T0, expires_at: T0 + 50 }));
    const [expired] = await s.expireJobs(T0 + 60);
    expect(expired).toMatchObject({ id: job.id, status: "expired", completed_at: T0 + 60, updated_at: T0 + 60 });
    expect((await s.getJob(job.id))!.updated_at).toBe(T0 + 60);
    await t.sql("UPDATE jobs SET updated_at = NULL WHERE id = ?", job.id);
    expect((await s.getJob(job.id))!.updated_at).toBe(T0 + 60);
    const queued = await s.createJob(newJob({ created_at: T0 + 5 }));
    await t.sql("UPDATE jobs SET updated_at = NULL WHERE id = ?", queued.id);
    expect((await s.getJob(queued.id))!.updated_at).toBe(T0 + 5);
    // The first move after that starts from the recorded times.
    expect((await s.transitionJob(queued.id, ["queued"], "running", { started_at: T0 + 7 }))!.updated_at).toBe(T0 + 7);
  });
});

describe("transitionJobWithAssets (a run's end with its last outputs, one commit)", () => {
  const outputOf = (job: JobRecord, i: number) => newAsset({ owner: job.owner, job_id: job.id, node_id: "2", type: "image", blob_key: blobKey(String(i)) });

  it("moves the job and adds the records together, in the order given, visible at once", async () => {
    const job = await jobIn("running");
    const outputs = [outputOf(job, 1), outputOf(job, 2)];
    const done = await t.store.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: T0 + 5 }, outputs);
    expect(done?.job).toMatchObject({ id: job.id, status: "succeeded", completed_at: T0 + 5 });
    expect(done?.assets.map((a) => a.id)).toEqual(outputs.map((o) => o.id));
    // Outputs take the job's expiry when they give none, as addAsset's do.
    expect(done?.assets[0]).toMatchObject({ job_id: job.id, node_id: "2", expires_at: job.expires_at });
    expect(await t.store.getJob(job.id)).toEqual(done?.job);
    expect(await t.store.listJobOutputs(job.id)).toEqual(done?.assets);
  });

  it("adds nothing when the job is not in a from-status, is absent, or is terminal", async () => {
    const canceling = await jobIn("canceling");
    expect(await t.store.transitionJobWithAssets(canceling.id, ["running"], "succeeded", { completed_at: T0 + 5 }, [outputOf(canceling, 3)])).toBeNull();
    expect(await t.store.listJobOutputs(canceling.id)).toEqual([]);
    expect(await t.store.transitionJobWithAssets("missing", ["running"], "succeeded", { completed_at: T0 + 5 }, [])).toBeNull();
    // The records go with whichever move lands: here the cancel.
    const canceled = await t.store.transitionJobWithAssets(canceling.id, ["canceling"], "canceled", { completed_at: T0 + 6 }, [outputOf(canceling, 4)]);
    expect(canceled?.job.status).toBe("canceled");
    expect(await t.store.listJobOutputs(canceling.id)).toHaveLength(1);

    const expired = await jobIn("expired");
    const error = await t.store
      .transitionJobWithAssets(expired.id, ["expired"], "succeeded", { completed_at: T0 + 7 }, [outputOf(expired, 5)])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TerminalStatusError);
    expect(await t.store.listJobOutputs(expired.id)).toEqual([]);
    expect(await t.store.getJob(expired.id)).toEqual(expired);
  });

  it("is all or nothing: a record that cannot be written leaves the job where it was", async () => {
    const job = await jobIn("running");
    const bad = { ...outputOf(job, 6), job_id: "no-such-job" };
    await expect(t.store.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: T0 + 5 }, [outputOf(job, 7), bad])).rejects.toThrow();
    expect((await t.store.getJob(job.id))?.status).toBe("running");
    expect(await t.store.listJobOutputs(job.id)).toEqual([]);
    // A malformed record is refused before anything is written.
    await expect(
      t.store.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: T0 + 5 }, [{ ...outputOf(job, 8), size_bytes: -1 }]),
    ).rejects.toThrow();
    expect((await t.store.getJob(job.id))?.status).toBe("running");
  });
});

describe("terminal statuses are final", () => {
  it.each(TERMINAL_STATUSES)("the API cannot move a %s job anywhere", async (status) => {
    const job = await jobIn(status);
    for (const to of ["queued", "running", "canceling", "succeeded", "canceled", "failed", "expired"] as const) {
      if (to === status) continue;
      const error = await t.store.transitionJob(job.id, [status], to, { completed_at: T0 + 9, started_at: T0 + 1 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TerminalStatusError);
      expect((error as TerminalStatusError).jobId).toBe(job.id);
    }
    // Not even a same-status rewrite of the outcome.
    await expect(t.store.transitionJob(job.id, [status], status, { completed_at: T0 + 99 })).rejects.toBeInstanceOf(TerminalStatusError);
    await expect(t.store.transitionJob(job.id, [status], status, { error: { code: "x", message: "y" } })).rejects.toBeInstanceOf(TerminalStatusError);
    expect(await t.store.getJob(job.id)).toEqual(job);
  });

  it("raw SQL cannot change a terminal job's status or outcome either", async () => {
    const done = await jobIn("succeeded");
    for (const statement of [
      "UPDATE jobs SET status = 'running' WHERE id = ?",
      "UPDATE jobs SET status = 'failed' WHERE id = ?",
      "UPDATE jobs SET completed_at = completed_at + 1 WHERE id = ?",
      "UPDATE jobs SET started_at = NULL WHERE id = ?",
      `UPDATE jobs SET error = '{"code":"x"}' WHERE id = ?`,
    ]) {
      await expect(t.sql(statement, done.id), statement).rejects.toThrow(/terminal job status is final/);
    }
    expect(await t.store.getJob(done.id)).toEqual(done);
    // What is not the outcome may still change, and the row may be deleted by retention.
    await t.sql("UPDATE jobs SET cost = 3 WHERE id = ?", done.id);
    expect((await t.store.getJob(done.id))?.cost).toBe(3);
    await t.sql("DELETE FROM jobs WHERE id = ?", done.id);
    expect(await t.store.getJob(done.id)).toBeNull();
  });

  it("raw SQL can still move a live job, and cannot change any job's identity", async () => {
    const job = await t.store.createJob(newJob());
    await t.sql("UPDATE jobs SET status = 'canceled', completed_at = 1 WHERE id = ?", job.id);
    expect((await t.store.getJob(job.id))?.status).toBe("canceled");
    const other = await t.store.createJob(newJob());
    await expect(t.sql("UPDATE jobs SET owner = 'mallory' WHERE id = ?", other.id)).rejects.toThrow(/identity is fixed/);
    await expect(t.sql("UPDATE jobs SET seq = seq + 1000 WHERE id = ?", other.id)).rejects.toThrow(/identity is fixed/);
  });
});

describe("updateProgress", () => {
  it("writes only while running or canceling", async () => {
    const progress = { value: 0.5, nodes_done: 1, nodes_total: 2, current_node: "1", step: 3, steps: 10 };
    const queued = await jobIn("queued");
    expect(await t.store.updateProgress(queued.id, progress)).toBe(false);
    const running = await jobIn("running");
    expect(await t.store.updateProgress(running.id, progress)).toBe(true);
    expect((await t.store.getJob(running.id))?.progress).toEqual(progress);
    const canceling = await jobIn("canceling");
    expect(await t.store.updateProgress(canceling.id, progress)).toBe(true);
    const done = await jobIn("succeeded");
    expect(await t.store.updateProgress(done.id, progress)).toBe(false);
    expect((await t.store.getJob(done.id))?.progress).toBeNull();
    expect(await t.store.updateProgress("missing", progress)).toBe(false);
  });
});
