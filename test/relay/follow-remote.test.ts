// What a process makes of the status notices of jobs other processes run (src/relay/event-relay.ts):
// each change told once, in order, even when the row read for a notice already shows a later one.
import { describe, expect, it } from "vitest";
import { EventBus, type JobEvent } from "../../src/jobs/event-bus.ts";
import { followRemote } from "../../src/relay/event-relay.ts";
import type { JobRecord, JobStatus, Store } from "../../src/store/index.ts";

const T0 = 1_800_000_000_000;

function job(status: JobStatus): JobRecord {
  const ended = status === "succeeded" || status === "canceled" || status === "failed";
  return {
    seq: 1,
    id: "j1",
    owner: "alice",
    deployment_id: null,
    status,
    created_at: T0,
    started_at: status === "queued" ? null : T0 + 1,
    completed_at: ended ? T0 + 2 : null,
    expires_at: T0 + 86_400_000,
    progress: null,
    error: status === "failed" ? { code: "node_execution_error", message: "x", node_id: null, class_type: null, traceback: null } : null,
    output_node_ids: ["2"],
    cost: null,
  } as JobRecord;
}

/** Follows notices with the row reading `current()` whenever it is read; the statuses the hosted socket would hear. */
async function heard(notices: JobStatus[], current: () => JobRecord): Promise<Array<{ status: JobStatus; completed_at: number | null }>> {
  const events = new EventBus();
  const seen: Array<{ status: JobStatus; completed_at: number | null }> = [];
  events.subscribeAll((e: JobEvent) => e.type === "status" && seen.push({ status: e.job.status, completed_at: e.job.completed_at }), { remote: () => true });
  const store = { getJob: async () => current() } as unknown as Store;
  const follow = followRemote(
    store,
    events,
    () => false,
    () => undefined,
    () => undefined,
  );
  for (const status of notices) follow({ kind: "status", id: "j1", owner: "alice", status });
  await new Promise(setImmediate); // the store answers at once: the chain of reads has settled by the next macrotask
  return seen;
}

describe("followRemote", () => {
  it("a short run read only after its end: the start is told as it was, then the end once", async () => {
    expect(await heard(["running", "succeeded"], () => job("succeeded"))).toEqual([
      { status: "running", completed_at: null },
      { status: "succeeded", completed_at: T0 + 2 },
    ]);
  });

  it("a notice whose status the row already passed (other than the start) is left to the later notice", async () => {
    expect(await heard(["queued", "running", "canceling", "canceled"], () => job("canceled"))).toEqual([
      { status: "running", completed_at: null },
      { status: "canceled", completed_at: T0 + 2 },
    ]);
  });

  it("rows read in step with their notices are told as read", async () => {
    const rows = [job("running"), job("failed")];
    expect(await heard(["running", "failed"], () => rows.shift()!)).toEqual([
      { status: "running", completed_at: null },
      { status: "failed", completed_at: T0 + 2 },
    ]);
  });

  it("a resync reads back every job followed here and tells the status it reached meanwhile, once", async () => {
    const events = new EventBus();
    const seen: JobStatus[] = [];
    events.subscribe("j1", (e) => e.type === "status" && seen.push(e.job.status));
    let row = job("running");
    const store = { getJob: async () => row } as unknown as Store;
    const follow = followRemote(
      store,
      events,
      () => false,
      () => undefined,
      () => undefined,
    );
    follow({ kind: "status", id: "j1", owner: "alice", status: "running" });
    await new Promise(setImmediate);
    row = job("succeeded"); // its end was said while the listener was down
    follow({ kind: "resync" });
    await new Promise(setImmediate);
    follow({ kind: "resync" });
    await new Promise(setImmediate);
    expect(seen).toEqual(["running", "succeeded"]);
  });
});
