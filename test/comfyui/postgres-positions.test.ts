// Queue positions in front of ComfyUI on PostgreSQL (an API node and two workers, the topology of
// issue #43): listed over and over during a run of several jobs, while the workers' prompts wait
// in and leave ComfyUI's queue, no two queued jobs of one answer share a position and no job's
// position ever steps back; and the same, listed all along the seeded schedules of the
// order-exploring harness (orders.ts: workers killed, stopped, terminated and taken over; each
// seed printed, EXPLORE_ORDERS_SEED=N replays one).
import { afterEach, describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { deploymentPerTest } from "../faults/deployment.ts";
import { postgresUnavailable } from "../postgres/pg.ts";
import { FakeComfyUI } from "./fake-comfyui.ts";
import { comfyFlags, textGraph, until } from "./helpers.ts";
import { exploreOrder } from "./orders.ts";

const unavailable = await postgresUnavailable();
const OBJECT_INFO = new EmbeddedEngine().nodeDefinitionsSync() as unknown as Record<string, unknown>;
const LEASE_MS = 3000;
/** Deeper than the positions counted exactly (8), so that both ways of placing a job are seen. */
const JOBS = 12;

const d = deploymentPerTest(unavailable);
const cleanup: Array<() => Promise<unknown>> = [];
// Registered after the deployment's: runs before it closes (after-hooks run in reverse).
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup.length = 0;
});

describe.skipIf(unavailable !== null)("queue positions in front of ComfyUI (PostgreSQL)", () => {
  it("are never shared by two queued jobs and never step back, while prompts wait in and leave ComfyUI's queue", { timeout: 120_000 }, async () => {
    const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true, runMs: () => 300 }).start();
    cleanup.push(() => fake.stop());
    fake.paused = true;
    const { api } = await d.apiNode({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });

    const ids: string[] = [];
    const seen = new Map<string, number[]>();
    for (let i = 0; i < JOBS; i++) {
      const job = await api.submit(textGraph(`position-${i}`));
      ids.push(job.id);
      seen.set(job.id, job.queue_position === null ? [] : [job.queue_position]);
    }
    // Both workers have a prompt waiting in ComfyUI's queue, the rest wait in flowgate's.
    await until(() => (fake.queue.pending.length >= 2 ? true : undefined), "two prompts waiting in ComfyUI");

    const shared: string[] = [];
    /** One answer listing the queued jobs: their places must all differ. Returns how many are queued. */
    const list = async (): Promise<number> => {
      const { body } = await api.get("/api/v2/jobs?status=queued&limit=100");
      const positions = new Map<number, string>();
      for (const job of body.jobs) {
        seen.get(job.id)!.push(job.queue_position);
        const other = positions.get(job.queue_position);
        if (other !== undefined) shared.push(`${job.id} and ${other} both at ${job.queue_position} in one answer`);
        positions.set(job.queue_position, job.id);
      }
      return body.jobs.length;
    };

    await list();
    fake.resume();
    // Listed over and over while the prompts run one after another (each a few hundred ms).
    await until(async () => ((await list()) === 0 ? true : undefined), "every job to leave the queue", 90_000);
    await until(
      async () => ((await Promise.all(ids.map((id) => api.job(id)))).every((j) => j.status === "succeeded") ? true : undefined),
      "every job to succeed",
    );

    expect(shared).toEqual([]);
    for (const [id, positions] of seen) {
      const back = positions.findIndex((p, i) => i > 0 && p > positions[i - 1]!);
      expect(back, `${id} stepped back: ${positions.join(" → ")}`).toBe(-1);
    }
    for (const id of ids) expect(fake.executions.get(id)).toBe(1);
  });
});

const replay = process.env.EXPLORE_ORDERS_SEED;
const first = Number(process.env.EXPLORE_ORDERS_FIRST_SEED ?? Math.floor(Math.random() * 1_000_000));
const seeds = replay !== undefined ? [Number(replay)] : [first, first + 1];

describe.skipIf(unavailable !== null)("queue positions in front of ComfyUI under the orders deployments produce (PostgreSQL)", () => {
  for (const seed of seeds) {
    it(`are never shared and never step back: seed ${seed}`, { timeout: 240_000 }, async () => {
      console.log(`positions under orders: seed ${seed} (replay: EXPLORE_ORDERS_SEED=${seed} npx vitest run test/comfyui/postgres-positions.test.ts)`);
      await exploreOrder(seed, { d, leaseMs: LEASE_MS, apiLeaseMs: 60_000, positions: true });
    });
  }
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
