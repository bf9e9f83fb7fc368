// The event relay between processes (src/relay/): two relays on one schema stand for two
// processes; what one sends, the other hears, in order, whole, and never its own. Real
// PostgreSQL notifications and a real Redis.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RemoteNotice, RunEvent } from "../../src/relay/event-relay.ts";
import { NOTIFY_PREVIEW_MAX_BYTES, PostgresRelay } from "../../src/relay/postgres-relay.ts";
import { BatchJoiner, encodeBatch, PART_BYTES } from "../../src/relay/wire.ts";
import { openStore, type Store } from "../../src/store/index.ts";
import { adminQuery, createTestSchema, dropTestSchema, postgresUnavailable, TEST_DATABASE_URL } from "../postgres/pg.ts";
import { redisUnavailable, TEST_REDIS_URL } from "../postgres/redis.ts";
import { newJob, T0 } from "../store/helpers.ts";

const unavailable = await postgresUnavailable();
const noRedis = await redisUnavailable();

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

async function relay(tag: string, redisUrl: string | null = null): Promise<PostgresRelay> {
  const r = await PostgresRelay.open({ url: TEST_DATABASE_URL, schema, tag, redisUrl });
  open.push(r);
  return r;
}

/** Listens with `r`; the notices heard, in order. */
async function hear(r: PostgresRelay): Promise<RemoteNotice[]> {
  const heard: RemoteNotice[] = [];
  stops.push(await r.listen((n) => heard.push(n)));
  return heard;
}

async function until<T>(read: () => T, done: (v: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = read();
    if (done(v)) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const base = { job_id: "j1", owner: "alice" };

describe("the relay's wire format", () => {
  it("cuts a batch into parts under PostgreSQL's limit at character boundaries and joins them back in any order", () => {
    const text = "é€😀".repeat(5_000); // multi-byte characters across every cut
    const events: RunEvent[] = [
      { type: "log", ...base, text },
      { type: "step", ...base, node_id: "3", value: 1, max: 2 },
    ];
    const parts = encodeBatch("p1", 7, events);
    expect(parts.length).toBeGreaterThan(5);
    for (const p of parts) expect(Buffer.byteLength(p)).toBeLessThan(8000);
    for (const p of parts) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(PART_BYTES + 40);
    const joiner = new BatchJoiner();
    const shuffled = [...parts].reverse();
    const results = shuffled.map((p) => joiner.take(p));
    expect(results.slice(0, -1).every((r) => r === null)).toBe(true);
    expect(results.at(-1)).toEqual({ sender: "p1", events });
  });

  it("drops malformed payloads", () => {
    const joiner = new BatchJoiner();
    for (const bad of ["", "no header", "p 1 0/1\n{not json", "p 1 2/1\n[]", "p x 0/1\n[]"]) expect(joiner.take(bad)).toBeNull();
  });
});

describe.skipIf(unavailable !== null)("PostgresRelay", () => {
  it("delivers a process's run events to another process in order, whole, and not back to itself", async () => {
    const worker = await relay("worker1");
    const api = await relay("api1");
    const onApi = await hear(api);
    const onWorker = await hear(worker);
    const preview = Buffer.alloc(20_000, 7); // several parts, still within the notification bound
    const sent: RunEvent[] = [
      { type: "node_start", ...base, node_id: "1", class_type: "FlowgateSampler" },
      ...Array.from({ length: 50 }, (_, i): RunEvent => ({ type: "step", ...base, node_id: "1", value: i + 1, max: 50 })),
      { type: "preview", ...base, node_id: "1", content_type: "image/jpeg", data: preview },
      { type: "log", ...base, text: "x".repeat(30_000) },
      { type: "node_done", ...base, node_id: "2", class_type: "SaveImage", ui: { images: [{ filename: "a.png", subfolder: "", type: "output" }] } },
    ];
    for (const e of sent.slice(0, 20)) worker.send(e);
    await new Promise((r) => setImmediate(r)); // a second batch
    for (const e of sent.slice(20)) worker.send(e);
    await worker.flushed();
    const heard = await until(
      () => onApi.flatMap((n) => (n.kind === "events" ? n.events : [])),
      (e) => e.length >= sent.length,
      "the events",
    );
    expect(heard).toEqual(sent);
    expect(onWorker).toEqual([]);
  });

  it("drops a preview too large for notifications when there is no Redis; the events around it still arrive", async () => {
    const worker = await relay("worker1");
    const onApi = await hear(await relay("api1"));
    worker.send({ type: "preview", ...base, node_id: "1", content_type: "image/png", data: Buffer.alloc(NOTIFY_PREVIEW_MAX_BYTES + 1) });
    worker.send({ type: "step", ...base, node_id: "1", value: 1, max: 1 });
    await worker.flushed();
    const heard = await until(
      () => onApi.flatMap((n) => (n.kind === "events" ? n.events : [])),
      (e) => e.length >= 1,
      "the step",
    );
    expect(heard.map((e) => e.type)).toEqual(["step"]);
  });

  it.skipIf(noRedis !== null)("passes previews of any size through Redis with --redis-url", async () => {
    const worker = await relay("worker1", TEST_REDIS_URL);
    const onApi = await hear(await relay("api1", TEST_REDIS_URL));
    const otherSchema = await createTestSchema();
    const other = await PostgresRelay.open({ url: TEST_DATABASE_URL, schema: otherSchema, tag: "elsewhere", redisUrl: TEST_REDIS_URL });
    open.push(other, { close: () => dropTestSchema(otherSchema) });
    const data = Buffer.alloc(2 * 1024 * 1024, 3);
    other.send({ type: "preview", ...base, node_id: "9", content_type: "image/png", data: Buffer.alloc(10) }); // another deployment's channel
    worker.send({ type: "preview", ...base, node_id: "1", content_type: "image/png", data });
    const heard = await until(
      () => onApi.flatMap((n) => (n.kind === "events" ? n.events : [])),
      (e) => e.length >= 1,
      "the preview",
    );
    expect(heard).toHaveLength(1);
    expect(heard[0]).toMatchObject({ type: "preview", node_id: "1", content_type: "image/png" });
    expect((heard[0] as Extract<RunEvent, { type: "preview" }>).data.equals(data)).toBe(true);
  });

  it("a wakes-only listener hears wakes only while it wants them, and is woken when it wants them again", async () => {
    const api = await relay("api1");
    const worker = await relay("worker1");
    const onWorker: RemoteNotice[] = [];
    stops.push(await worker.listen((n) => onWorker.push(n), { wakesOnly: true }));
    await until(
      () => onWorker,
      (n) => n.length >= 1,
      "the wake of its first LISTEN",
    );
    api.send({ type: "step", ...base, node_id: "1", value: 1, max: 1 });
    await api.flushed();
    api.wake();
    await api.flushed();
    await until(
      () => onWorker,
      (n) => n.length >= 2,
      "the submission's wake",
    );
    worker.wantWakes(false);
    const lastQuery = async () =>
      String((await adminQuery("SELECT query FROM pg_stat_activity WHERE application_name = 'flowgate-listen worker1'"))[0]?.query ?? "");
    for (let i = 0; !(await lastQuery()).startsWith("UNLISTEN"); i++) {
      if (i > 200) throw new Error("the wakes-only listener did not UNLISTEN");
      await new Promise((r) => setTimeout(r, 25));
    }
    worker.wantWakes(true); // LISTEN again: woken once more, to look for what was queued meanwhile
    await until(
      () => onWorker,
      (n) => n.length >= 3,
      "the wake of listening again",
    );
    expect(onWorker).toEqual([{ kind: "wake" }, { kind: "wake" }, { kind: "wake" }]);
  });

  it("a wake reaches the other processes once per turn, not the waking one", async () => {
    const api = await relay("api1");
    const onApi = await hear(api);
    const onWorker = await hear(await relay("worker1"));
    for (let i = 0; i < 5; i++) api.wake(); // one burst of submissions
    await api.flushed();
    await until(
      () => onWorker,
      (n) => n.length >= 1,
      "the wake",
    );
    await new Promise((r) => setTimeout(r, 100));
    expect(onWorker).toEqual([{ kind: "wake" }]);
    expect(onApi).toEqual([]);
  });

  it("hears status changes of other processes with their owner, and not the changes it made", async () => {
    const api = await relay("api1");
    const onApi = await hear(api);
    const mine: Store = await openStore({ kind: "postgres", url: TEST_DATABASE_URL, schema, applicationName: "flowgate api1" });
    const theirs: Store = await openStore({ kind: "postgres", url: TEST_DATABASE_URL, schema, applicationName: "flowgate worker1" });
    open.push(mine, theirs);
    const a = await mine.createJob(newJob({ owner: "alice" }));
    const b = await mine.createJob(newJob({ owner: "bob" }));
    await mine.transitionJob(a.id, ["queued"], "canceled", { completed_at: T0 }); // this process: not heard
    await theirs.transitionJob(b.id, ["queued"], "running", { started_at: T0 });
    const heard = await until(
      () => onApi,
      (n) => n.length >= 1,
      "the status",
    );
    await new Promise((r) => setTimeout(r, 100)); // nothing else comes
    // The row comes with the notice, as a read would give it.
    expect(onApi).toEqual([{ kind: "status", id: b.id, owner: "bob", status: "running", job: await theirs.getJob(b.id) }]);
    expect(heard).toHaveLength(1);
  });

  it("a listener follows other processes only while asked: nothing heard before, a resync when it starts, nothing after it stops", async () => {
    const api = await relay("api1");
    const onApi: RemoteNotice[] = [];
    stops.push(await api.listen((n) => onApi.push(n), { follow: false, wakes: false }));
    // A process that follows all along: once it heard a change, the other one would have too.
    const onProbe = await hear(await relay("probe1"));
    const theirs: Store = await openStore({ kind: "postgres", url: TEST_DATABASE_URL, schema, applicationName: "flowgate worker1" });
    open.push(theirs);
    const heardByProbe = (n: number) =>
      until(
        () => onProbe,
        (h) => h.length >= n,
        `the probe's notice ${n}`,
      );
    const a = await theirs.createJob(newJob({ owner: "alice" }));
    await theirs.transitionJob(a.id, ["queued"], "running", { started_at: T0 });
    await heardByProbe(1);
    expect(onApi).toEqual([]);

    api.wantFollow(true);
    await api.listening();
    // What was said before it followed is read, not heard: one resync, then what follows is heard.
    await theirs.transitionJob(a.id, ["running"], "succeeded", { completed_at: T0 + 1 });
    await until(
      () => onApi,
      (n) => n.length >= 2,
      "the resync and the end",
    );
    expect(onApi.map((n) => n.kind)).toEqual(["resync", "status"]);
    expect(onApi[1]).toMatchObject({ id: a.id, status: "succeeded" });

    api.wantFollow(false);
    await api.listening();
    const b = await theirs.createJob(newJob({ owner: "alice" }));
    await theirs.transitionJob(b.id, ["queued"], "running", { started_at: T0 });
    await heardByProbe(3);
    expect(onApi).toHaveLength(2);
  });

  it("a status change whose row passes a notification's size is still heard, without the row (read back instead)", async () => {
    const onApi = await hear(await relay("api1"));
    const theirs: Store = await openStore({ kind: "postgres", url: TEST_DATABASE_URL, schema, applicationName: "flowgate worker1" });
    open.push(theirs);
    const job = await theirs.createJob(newJob({ owner: "bob" }));
    const progress = { value: 0.5, nodes_done: 1, nodes_total: 2, message: "x".repeat(9_000) };
    await theirs.transitionJob(job.id, ["queued"], "running", { started_at: T0, progress });
    await until(
      () => onApi.filter((n) => n.kind === "status"),
      (n) => n.length >= 1,
      "the status",
    );
    expect(onApi.filter((n) => n.kind === "status")).toEqual([{ kind: "status", id: job.id, owner: "bob", status: "running" }]);
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
