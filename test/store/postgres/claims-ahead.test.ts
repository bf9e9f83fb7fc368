// Jobs a worker claims ahead of its engine slots while its runs are short (src/jobs/claim-ahead.ts):
// the claims ride the ends' statements of a real PostgreSQL store, the graphs wait in the worker
// for a slot, and a long run turns the claims ahead off. A dispatcher in this process, under a
// lease, with a scripted engine whose runs store one output each (so their ends carry the claims).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RunEnd } from "../../../src/jobs/engine-port.ts";
import { PostgresLeases } from "../../../src/store/postgres-leases.ts";
import { openJobSystem, type JobSystem } from "../../fixtures/job-system.ts";
import { openJobStore, queuedJob, type JobStore } from "../../fixtures/job-store.ts";
import { ScriptedEngine, textOutput, type ScriptedRun } from "../../fixtures/scripted-engine.ts";
import { proxyTo, type TcpProxy } from "../../faults/tcp-proxy.ts";
import { adminQuery, createTestSchema, dropTestSchema, postgresUnavailable, TEST_DATABASE_URL } from "../../postgres/pg.ts";
import { waitFor } from "../../server/helpers.ts";

const unavailable = await postgresUnavailable();
const WORKER = "worker-ahead";
const TERMINAL = ["succeeded", "failed", "canceled", "expired"];
/**
 * Every graph counts as short (however busy the machine) but those that move the worker's clock
 * past it: a run is long by the clock the dispatcher reads, not by how long the test took.
 */
const SHORT_RUN_MS = 60_000;
const HOUR = 3_600_000;

let schema = "";
let data: JobStore;
let leases: PostgresLeases;
let system: JobSystem | null = null;
/** Between the worker and PostgreSQL: a test makes its faults there. */
let proxy: TcpProxy;
/** What the worker logged. */
let logged: string[] = [];
/** How far the worker's clock runs ahead of Date.now (a long run moves it). */
let skew = 0;

beforeEach(async () => {
  if (unavailable !== null) return;
  schema = await createTestSchema();
  proxy = await proxyTo(TEST_DATABASE_URL);
  const url = proxy.urlFor(TEST_DATABASE_URL);
  data = await openJobStore("ahead", { database: { kind: "postgres", url, schema } });
  leases = await PostgresLeases.open({ url, schema });
  logged = [];
  skew = 0;
});

afterEach(async () => {
  if (unavailable !== null) return;
  proxy.heal();
  await system?.close();
  system = null;
  await Promise.all([data.close(), leases.close()]);
  await proxy.close();
  await dropTestSchema(schema);
});

/** Starts a worker of `concurrency` slots whose engine runs `script`. */
async function worker(concurrency: number, script: (run: ScriptedRun) => Promise<RunEnd>): Promise<JobSystem> {
  system = await openJobSystem({
    data,
    concurrency,
    engine: new ScriptedEngine({ script }),
    lease: { leases, workerId: WORKER, leaseMs: 30_000, dispatch: true },
    endWithOutputs: "inline",
    log: (line) => logged.push(line),
    shortRunMs: SHORT_RUN_MS,
    now: () => Date.now() + skew,
  });
  return system;
}

/** Jobs of this worker the database shows running (or canceling): its slots' and those claimed ahead. */
async function heldInDatabase(): Promise<number> {
  const [row] = await adminQuery(`SELECT count(*)::int AS n FROM ${schema}.jobs WHERE worker_id = $1 AND status IN ('running', 'canceling')`, [WORKER]);
  return row!.n as number;
}

/** Queues `n` jobs; their ids in order. */
async function queue(n: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await queuedJob(data.store, `${prefix}-${String(i).padStart(3, "0")}`)).id);
  return ids;
}

async function statuses(ids: readonly string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await data.store.getJob(id))!.status));
}

const allEnded = (ids: readonly string[]) =>
  waitFor(
    () => statuses(ids),
    (s) => s.every((status) => TERMINAL.includes(status)),
    `${ids.length} jobs to end`,
    60_000,
  );

/**
 * A worker of one slot, so every step is in order: three short runs (the first two turn the claims
 * ahead on), then the third's end claims `block` and `waiting` together, and `waiting`, claimed
 * ahead, waits for the slot behind `block`, whose graph hangs until `release`. `queuedAfter` more
 * jobs are queued behind them. `graphsRun`: the jobs whose graph started unaborted, in order.
 */
async function claimedAheadBehindHangingRun(queuedAfter: number) {
  let release!: () => void;
  const blocked = new Promise<void>((resolve) => (release = resolve));
  const graphsRun: string[] = [];
  const s = await worker(1, async (run) => {
    if (!run.signal.aborted) graphsRun.push(run.jobId);
    if (run.jobId === "ahead-block") await blocked;
    await run.callbacks.onOutput(textOutput("9", `${run.jobId}.png`, run.jobId));
    return { kind: "succeeded" };
  });
  const first = await queue(3, "ahead-short");
  const block = (await queuedJob(data.store, "ahead-block")).id;
  const waiting = (await queuedJob(data.store, "ahead-waiting")).id;
  const after = await queue(queuedAfter, "ahead-after");
  await s.engine.started(block);
  await waitFor(
    async () => (await data.store.getJob(waiting))!.status,
    (status) => status === "running",
    "the job behind the hanging run to be claimed ahead",
  );
  return { s, first, block, waiting, after, release, graphsRun };
}

describe.skipIf(unavailable !== null)("jobs claimed ahead of the engine's slots (PostgreSQL)", () => {
  it("while runs are short, holds more jobs than its slots, and never runs more graphs at once than its slots", async () => {
    const slots = 2;
    let graphs = 0;
    let mostGraphs = 0;
    let mostHeld = 0;
    await worker(slots, async (run) => {
      mostGraphs = Math.max(mostGraphs, ++graphs);
      try {
        mostHeld = Math.max(mostHeld, await heldInDatabase());
        await run.callbacks.onOutput(textOutput("9", `${run.jobId}.png`, run.jobId));
        return { kind: "succeeded" };
      } finally {
        graphs--;
      }
    });
    const ids = await queue(60, "short");
    await allEnded(ids);
    expect(await statuses(ids)).toEqual(ids.map(() => "succeeded"));
    expect(mostGraphs, "graphs in the engine at once").toBeLessThanOrEqual(slots);
    expect(mostHeld, "jobs the worker held running at once").toBeGreaterThan(slots);
    expect(mostHeld, "jobs the worker held running at once").toBeLessThanOrEqual(2 * slots);
  });

  it("after a long run claims no job ahead: once the runs turn long, the worker holds no more jobs than its slots", async () => {
    const slots = 2;
    const SHORT = 12;
    let started = 0;
    let longEnded = 0;
    /** What the database showed at each start, and how many long runs had ended by then. */
    const seen: Array<{ held: number; longEnded: number }> = [];
    await worker(slots, async (run) => {
      const long = ++started > SHORT;
      seen.push({ held: await heldInDatabase(), longEnded });
      await run.callbacks.onOutput(textOutput("9", `${run.jobId}.png`, run.jobId));
      if (long) {
        skew += HOUR; // this graph took an hour by the worker's clock
        longEnded++;
      }
      return { kind: "succeeded" };
    });
    const ids = await queue(SHORT + 16, "mixed");
    await allEnded(ids);
    expect(await statuses(ids)).toEqual(ids.map(() => "succeeded"));
    expect(Math.max(...seen.slice(0, SHORT).map((s) => s.held)), "held while the runs were short").toBeGreaterThan(slots);
    // A long run that ended turned the claims ahead off; the jobs claimed ahead before it (at most
    // as many as the slots) start as the slots' runs end, each one more long run.
    const later = seen.filter((s) => s.longEnded >= 2 * slots);
    expect(later.length).toBeGreaterThan(0);
    expect(Math.max(...later.map((s) => s.held)), "held once the runs were long").toBeLessThanOrEqual(slots);
  });

  it("a claim ahead whose answer was lost is read back, and its jobs still wait for the slot", async () => {
    // One slot, every step in order: the second run's end turns the claims ahead on and claims two
    // jobs, its slot's and one ahead; that statement commits and its answer is lost.
    let graphs = 0;
    let mostGraphs = 0;
    let started = 0;
    let cut: Promise<void> | null = null;
    await worker(1, async (run) => {
      mostGraphs = Math.max(mostGraphs, ++graphs);
      try {
        if (++started === 2) cut = proxy.loseAnswer(/fg_endJobsClaiming/, /running/);
        await run.callbacks.onOutput(textOutput("9", `${run.jobId}.png`, run.jobId));
        await new Promise((resolve) => setImmediate(resolve));
        return { kind: "succeeded" };
      } finally {
        graphs--;
      }
    });
    const ids = await queue(6, "lost");
    await waitFor(
      () => cut,
      (c) => c !== null,
      "the cut to be armed",
    );
    await cut;
    const claimed = await adminQuery(`SELECT id FROM ${schema}.jobs WHERE worker_id = $1 AND status = 'running' ORDER BY seq`, [WORKER]);
    expect(claimed.map((r) => r.id)).toEqual(ids.slice(2, 4));
    proxy.heal();
    await allEnded(ids);
    expect(await statuses(ids)).toEqual(ids.map(() => "succeeded"));
    for (const id of ids.slice(2, 4)) expect(logged).toContain(`job ${id}: claimed by this worker in a claim whose answer was lost; running it now`);
    expect(mostGraphs, "graphs in the engine at once").toBe(1);
  });

  it("a job claimed ahead and canceled while it waits for a slot ends canceled without its graph running", async () => {
    const { s, first, block, waiting, release, graphsRun } = await claimedAheadBehindHangingRun(0);
    expect(s.engine.active.has(waiting), "a graph of the job claimed ahead in the engine").toBe(false);
    expect((await s.jobs.cancel({ owner: "alice" }, waiting)).job.status).toBe("canceling");
    expect((await s.status(waiting, "canceled")).status).toBe("canceled");
    release();
    await allEnded([...first, block]);
    expect(await statuses([...first, block, waiting])).toEqual(["succeeded", "succeeded", "succeeded", "succeeded", "canceled"]);
    expect(graphsRun).toEqual([...first, block]);
  });

  it("a stop with a grace runs the job claimed ahead once the slot frees, and leaves the queue queued", async () => {
    const { s, first, block, waiting, after, release } = await claimedAheadBehindHangingRun(3);
    const stopped = s.dispatcher.stop(60_000);
    release();
    await stopped;
    expect(await statuses([...first, block, waiting, ...after])).toEqual([
      ...first.map(() => "succeeded"),
      "succeeded",
      "succeeded",
      ...after.map(() => "queued"),
    ]);
    expect(s.engine.startOrder).toEqual([...first, block, waiting]);
  });
});
