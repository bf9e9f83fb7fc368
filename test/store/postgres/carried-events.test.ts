// A run's events ride in its writes' transactions (issue #48): what a process said before a
// progress snapshot or its end commits with that write, and another process hears it in the
// same order as before, ahead of the end's status. Real PostgreSQL notifications, two relays
// standing for a worker and an API node.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RemoteNotice, RunEvent } from "../../../src/relay/event-relay.ts";
import { PostgresRelay } from "../../../src/relay/postgres-relay.ts";
import { openStore, type Store } from "../../../src/store/index.ts";
import { payloadsParam } from "../../../src/store/postgres-queries.ts";
import { createTestSchema, dropTestSchema, postgresUnavailable, TEST_DATABASE_URL } from "../../postgres/pg.ts";
import { waitFor } from "../../server/helpers.ts";
import { newJob, T0 } from "../helpers.ts";

const unavailable = await postgresUnavailable();

let schema: string;
let open: Array<{ close(): Promise<void> }>;
let stops: Array<() => Promise<void>>;

beforeEach(async () => {
  if (unavailable !== null) return;
  schema = await createTestSchema();
  open = [];
  stops = [];
});

afterEach(async () => {
  if (unavailable !== null) return;
  for (const stop of stops) await stop();
  for (const o of open) await o.close();
  await dropTestSchema(schema);
});

async function relay(tag: string): Promise<PostgresRelay> {
  const r = await PostgresRelay.open({ url: TEST_DATABASE_URL, schema, tag, redisUrl: null });
  open.push(r);
  return r;
}

async function store(): Promise<Store> {
  const s = await openStore({ kind: "postgres", url: TEST_DATABASE_URL, schema });
  open.push(s);
  return s;
}

/** What `r` hears, in order, as event types and statuses. */
async function hear(r: PostgresRelay): Promise<string[]> {
  const heard: string[] = [];
  stops.push(
    await r.listen((n: RemoteNotice) => {
      if (n.kind === "events") heard.push(...n.events.map((e) => e.type));
      else if (n.kind === "status") heard.push(`status:${n.status}`);
    }),
  );
  return heard;
}

describe.skipIf(unavailable !== null)("a run's events carried by its writes", () => {
  it("go out in the write's transaction, in order, and before the end's status", async () => {
    const s = await store();
    const worker = await relay("worker1");
    const heard = await hear(await relay("api1"));
    const job = await s.createJob(newJob());
    await s.transitionJob(job.id, ["queued"], "running", { started_at: T0 });
    await waitFor(
      () => heard.length,
      (n) => n === 1,
      "the start",
    );
    const base = { job_id: job.id, owner: job.owner };
    const nodeStart: RunEvent = { type: "node_start", ...base, node_id: "1", class_type: "EmptyImage" };
    const nodeDone: RunEvent = { type: "node_done", ...base, node_id: "1", class_type: "EmptyImage", ui: null };

    worker.send(nodeStart);
    const progress = { value: 0.5, nodes_done: 1, nodes_total: 2 };
    expect(await worker.carry((notify) => s.updateProgress(job.id, progress, undefined, notify))).toBe(true);
    worker.send(nodeDone);
    worker.send({ type: "log", ...base, text: "done" });
    const final: RunEvent = {
      type: "progress",
      ...base,
      progress: { value: 1, nodes_done: 2, nodes_total: 2, current_node: null, current_node_class: null, step: null, steps: null, message: null },
    };
    const end = (id: string) =>
      worker.carry((notify) => s.transitionJob(id, ["running"], "succeeded", { completed_at: T0 + 1 }, notify ? { notify } : {}), [final]);
    // A job that does not move hears the events said, not what goes only with the end.
    const queued = await s.createJob(newJob());
    worker.send({ type: "log", ...base, text: "before" });
    expect(await end(queued.id)).toBeNull();
    const ended = await end(job.id);
    expect(ended?.status).toBe("succeeded");
    await worker.flushed();
    await waitFor(
      () => heard.length,
      (n) => n >= 7,
      "the events and the end",
    );
    expect(heard).toEqual(["status:running", "node_start", "node_done", "log", "log", "progress", "status:succeeded"]);
    expect((await s.getJob(job.id))?.progress).toBeTruthy();
  });

  it("arrive as said whatever their text holds, carried by an end, by a batch of ends or sent alone", async () => {
    const s = await store();
    const worker = await relay("worker1");
    const api = await relay("api1");
    const texts: string[] = [];
    stops.push(
      await api.listen((n: RemoteNotice) => {
        if (n.kind === "events") for (const e of n.events) if (e.type === "log") texts.push(e.text);
      }),
    );
    // Quotes, backslashes, control characters (the record separator among them), accents, emoji.
    const odd = (i: number) => `${i} "q" \\ \\" \n\t\u001e\u0001 é 😀 '${"x".repeat(i)}'`;
    const jobs = await Promise.all([0, 1, 2].map(() => s.createJob(newJob())));
    for (const job of jobs) await s.transitionJob(job.id, ["queued"], "running", { started_at: T0 });
    const log = (job: { id: string; owner: string }, i: number): RunEvent => ({ type: "log", job_id: job.id, owner: job.owner, text: odd(i) });
    worker.send(log(jobs[0]!, 0));
    await worker.carry(
      (notify) => s.transitionJob(jobs[0]!.id, ["running"], "succeeded", { completed_at: T0 + 1 }, notify ? { notify } : {}),
      [log(jobs[0]!, 1)],
    );
    // Two ends in one turn: one statement (the store's batched ends).
    worker.send(log(jobs[1]!, 2));
    worker.send(log(jobs[2]!, 3));
    await Promise.all(
      [jobs[1]!, jobs[2]!].map((job, k) =>
        worker.carry(
          (notify) => s.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: T0 + 1 }, [], [], undefined, notify),
          [log(job, 4 + k)],
          job.id,
        ),
      ),
    );
    worker.send(log(jobs[0]!, 6));
    await worker.flushed();
    await waitFor(
      () => texts.length,
      (n) => n >= 7,
      "the events",
    );
    expect(texts.toSorted()).toEqual([0, 1, 2, 3, 4, 5, 6].map(odd).toSorted());
    // A payload that held the separator raw would be split in two: refused.
    expect(() => payloadsParam(["a\u001eb"])).toThrow(/record separator/);
  });

  it("go out even when the write matches no row, and with a later write or batch when it fails", async () => {
    const s = await store();
    const worker = await relay("worker1");
    const heard = await hear(await relay("api1"));
    const queued = await s.createJob(newJob());
    const base = { job_id: queued.id, owner: queued.owner };
    worker.send({ type: "log", ...base, text: "a" });
    // A queued job takes no snapshot: nothing matches, the events still go.
    expect(await worker.carry((notify) => s.updateProgress(queued.id, { value: 0.1, nodes_done: 0, nodes_total: 2 }, undefined, notify))).toBe(false);
    await waitFor(
      () => heard.length,
      (n) => n === 1,
      "the first log",
    );
    worker.send({ type: "log", ...base, text: "b" });
    await expect(worker.carry(() => Promise.reject(new Error("the write failed")))).rejects.toThrow("the write failed");
    worker.send({ type: "step", ...base, node_id: "1", value: 1, max: 2 });
    await worker.flushed();
    await waitFor(
      () => heard.length,
      (n) => n >= 3,
      "the events after the failed write",
    );
    expect(heard).toEqual(["log", "log", "step"]);
  });

  it("go out once when a write fails after the statement that carried them committed (a second move of an end)", async () => {
    const s = await store();
    const worker = await relay("worker1");
    const heard = await hear(await relay("api1"));
    const queued = await s.createJob(newJob());
    const base = { job_id: queued.id, owner: queued.owner };
    worker.send({ type: "log", ...base, text: "a" });
    // The first move matches no row but commits the events; the second one fails.
    const end = worker.carry(async (notify) => {
      await s.transitionJob(queued.id, ["running"], "succeeded", { completed_at: T0 + 1 }, notify ? { notify } : {});
      throw new Error("the second move failed");
    });
    await expect(end).rejects.toThrow("the second move failed");
    worker.send({ type: "step", ...base, node_id: "1", value: 1, max: 2 });
    await worker.flushed();
    await waitFor(
      () => heard.length,
      (n) => n >= 2,
      "the events",
    );
    expect(heard).toEqual(["log", "step"]);
  });

  it("of different jobs do not wait for each other: each write carries its own job's events, and a job's writes stay in order", async () => {
    const s = await store();
    const worker = await relay("worker1");
    const heard: string[] = [];
    stops.push(
      await (await relay("api1")).listen((n: RemoteNotice) => {
        if (n.kind === "events") heard.push(...n.events.map((e) => `${e.job_id === a.id ? "a" : "b"}:${e.type}`));
        else if (n.kind === "status" && n.status === "succeeded") heard.push(`${n.id === a.id ? "a" : "b"}:succeeded`);
      }),
    );
    const a = await s.createJob(newJob());
    const b = await s.createJob(newJob());
    for (const job of [a, b]) await s.transitionJob(job.id, ["queued"], "running", { started_at: T0 });
    const log = (id: string, text: string): RunEvent => ({ type: "log", job_id: id, owner: a.owner, text });
    worker.send(log(a.id, "a1"));
    worker.send(log(b.id, "b1"));
    // Job a's snapshot is held before its statement; its next write waits for it.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    const snapshot = worker.carry(
      async (notify) => {
        await held;
        order.push("a snapshot");
        return s.updateProgress(a.id, { value: 0.5, nodes_done: 1, nodes_total: 2 }, undefined, notify);
      },
      [],
      a.id,
    );
    const endOf = (id: string) => (notify: Parameters<Parameters<typeof worker.carry>[0]>[0]) => {
      order.push(`${id === a.id ? "a" : "b"} end`);
      return s.transitionJob(id, ["running"], "succeeded", { completed_at: T0 + 1 }, notify ? { notify } : {});
    };
    const aEnd = worker.carry(endOf(a.id), [], a.id);
    // Job b ends while job a's write is held: its own event rides in its end, before its status.
    expect((await worker.carry(endOf(b.id), [], b.id))?.status).toBe("succeeded");
    await waitFor(
      () => heard.length,
      (n) => n >= 2,
      "job b's event and end",
    );
    expect(heard).toEqual(["b:log", "b:succeeded"]);
    release();
    expect(await snapshot).toBe(true);
    expect((await aEnd)?.status).toBe("succeeded");
    await worker.flushed();
    await waitFor(
      () => heard.length,
      (n) => n >= 4,
      "job a's event and end",
    );
    expect(heard).toEqual(["b:log", "b:succeeded", "a:log", "a:succeeded"]);
    expect(order).toEqual(["b end", "a snapshot", "a end"]);
  });
});
