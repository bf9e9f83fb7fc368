// In front of ComfyUI on PostgreSQL (leased dispatch): a job whose prompt waits in ComfyUI's queue
// stays `queued`, claimed under the worker's lease, and becomes `running` when ComfyUI starts it,
// as it does on SQLite.
import { afterEach, describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { adminQuery, createTestSchema, dropTestSchema, postgresUnavailable, schemaUrl } from "../postgres/pg.ts";
import { SseClient } from "../server/helpers.ts";
import { FakeComfyUI } from "./fake-comfyui.ts";
import { call, startFront, TERMINAL, until, type Front } from "./helpers.ts";

const unavailable = await postgresUnavailable();
const OBJECT_INFO = new EmbeddedEngine().nodeDefinitionsSync() as unknown as Record<string, unknown>;
const graph = {
  "1": { class_type: "PrimitiveString", inputs: { value: "waits" } },
  "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
};

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup.length = 0;
});

/** A ComfyUI double whose worker waits, and a flowgate in front of it on a fresh PostgreSQL schema with short leases (2 s). */
async function setup(): Promise<{ fake: FakeComfyUI; front: Front; schema: string }> {
  const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true }).start();
  cleanup.push(() => fake.stop());
  fake.paused = true;
  const schema = await createTestSchema();
  cleanup.push(() => dropTestSchema(schema));
  const front = await startFront([fake.url], ["--database-url", schemaUrl(schema), "--lease", "2s"]);
  cleanup.push(() => front.stop());
  return { fake, front, schema };
}

const row = async (schema: string, id: string) =>
  (await adminQuery(`SELECT status, started_at, worker_id, lease_epoch, lease_until FROM ${schema}.jobs WHERE id = $1`, [id]))[0]!;

describe.skipIf(unavailable !== null)("in front of ComfyUI on PostgreSQL", () => {
  it("a job stays queued, under its worker's lease, while its prompt waits in ComfyUI's queue, and runs from ComfyUI's start", {
    timeout: 60_000,
  }, async () => {
    const { fake, front, schema } = await setup();
    const res = await call("POST", `${front.url}/api/v2/jobs`, { workflow: graph });
    expect(res.status).toBe(201);
    const id: string = res.body.id;
    const stream = new SseClient(`${front.url}/api/v2/jobs/${id}/events`);
    cleanup.push(async () => stream.close());
    await until(() => (fake.queue.pending.includes(id) ? true : undefined), "the prompt waiting in ComfyUI");

    // The lease is renewed while it waits (several heartbeats of a 2 s lease: short enough to see four renewals soon, long enough that a busy machine never lets it pass), and nothing fails it.
    const leases = new Set<string>();
    await until(async () => {
      const r = await row(schema, id);
      expect(r).toMatchObject({ status: "queued", started_at: null, lease_epoch: "1" });
      expect(r.worker_id).not.toBeNull();
      leases.add(String(r.lease_until));
      return leases.size >= 4 ? true : undefined;
    }, "four renewals of the lease");
    const waiting = (await call("GET", `${front.url}/api/v2/jobs/${id}`)).body;
    expect(waiting).toMatchObject({ status: "queued", started_at: null });
    const queue = (await call("GET", `${front.url}/api/queue`)).body;
    expect(queue.queue_running).toEqual([]);
    expect(queue.queue_pending.map((entry: unknown[]) => entry[1])).toEqual([id]);
    expect(stream.of("status").map((e) => e.json.status)).toEqual(["queued"]);

    const startedAfter = Date.now();
    fake.resume();
    const job = await until(async () => {
      const { body } = await call("GET", `${front.url}/api/v2/jobs/${id}`);
      return TERMINAL.includes(body.status) ? body : undefined;
    }, "the job to end");
    expect(job.status).toBe("succeeded");
    expect(Date.parse(job.started_at)).toBeGreaterThanOrEqual(startedAfter - 1);
    await stream.waitUntil((c) => c.ended, "the end of the stream");
    expect(stream.of("status").map((e) => e.json.status)).toEqual(["queued", "running", "succeeded"]);
    expect(fake.executions.get(id)).toBe(1);
  });

  it("a job canceled while its prompt waits in ComfyUI's queue ends canceled, deleted there, never run", { timeout: 60_000 }, async () => {
    const { fake, front, schema } = await setup();
    const id: string = (await call("POST", `${front.url}/api/v2/jobs`, { workflow: graph })).body.id;
    await until(() => (fake.queue.pending.includes(id) ? true : undefined), "the prompt waiting in ComfyUI");
    const canceled = await call("POST", `${front.url}/api/v2/jobs/${id}/cancel`);
    expect(canceled.body.status).toBe("canceled");
    await until(() => (fake.calls("POST", "/queue").some((r) => r.json?.delete?.includes(id)) ? true : undefined), "the prompt deleted in ComfyUI");
    fake.resume();
    expect(fake.queue.pending).toEqual([]);
    expect(fake.executions.has(id)).toBe(false);
    expect((await row(schema, id)).status).toBe("canceled");
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
