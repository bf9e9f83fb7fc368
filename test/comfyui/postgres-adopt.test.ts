// Workers in front of ComfyUI on PostgreSQL: when a worker dies (SIGKILL) holding a job, another
// worker takes the job over once the lease passes, instead of failing it worker_lost, and the
// prompt runs once: one ComfyUI finished meanwhile is collected, one still running is followed,
// one ComfyUI never received is submitted by the new worker. A deployment on the embedded engine
// still fails such a job worker_lost. Real processes (an API node, `flowgate worker`s) on a fresh
// schema, the ComfyUI double keeping its queue while they die.
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import type { CliProcess } from "../cli/cli.ts";
import { deploymentPerTest } from "../faults/deployment.ts";
import { delayedImageGraph } from "../fixtures/graphs.ts";
import { adminQuery, postgresUnavailable, TEST_DATABASE_URL } from "../postgres/pg.ts";
import { waitFor } from "../server/helpers.ts";
import { FakeComfyUI } from "./fake-comfyui.ts";
import { comfyFlags, textGraph, until } from "./helpers.ts";

const unavailable = await postgresUnavailable();
const OBJECT_INFO = new EmbeddedEngine().nodeDefinitionsSync() as unknown as Record<string, unknown>;
/** The workers' lease: short, so that a dead worker's jobs are taken over soon. */
const LEASE_MS = 1000;
/**
 * The API node's own lease: it fails a job a worker in front of ComfyUI held only two of its
 * leases after that lease passed, so that here it never races the adopting worker, however slowly
 * that one starts on a busy machine.
 */
const API_LEASE_MS = 60_000;
/** The lease of two workers that both run jobs while one is stopped. */
const BOTH_LEASE_MS = 3000;

const d = deploymentPerTest(unavailable);
const cleanup: Array<() => Promise<unknown>> = [];
// Registered after the deployment's: runs before it closes (after-hooks run in reverse).
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup.length = 0;
});

/** A ComfyUI double whose worker runs prompts, an API node and a first worker in front of it. */
async function deployment(options: ConstructorParameters<typeof FakeComfyUI>[0] = { objectInfo: OBJECT_INFO }) {
  const fake = await new FakeComfyUI({ ...options, objectInfo: OBJECT_INFO, worker: true }).start();
  cleanup.push(() => fake.stop());
  const { api } = await d.apiNode({ leaseMs: API_LEASE_MS, flags: comfyFlags(fake.url) });
  const first = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
  return { fake, api, first };
}

/** Whether the job's row carries this worker process's id (`host:pid:random`). */
const heldBy = (row: Record<string, unknown>, w: CliProcess) => String(row.worker_id).includes(`:${w.child.pid}:`);

/** A job's recorded run times equal the double's (within 1 s): started_at, completed_at and execution_ms. */
function expectTimesOfDouble(job: { id: string; started_at: string; completed_at: string; metrics: { execution_ms: number } }, fake: FakeComfyUI): void {
  const { startedAt, endedAt } = fake.recordedTimes(job.id);
  const off = (iso: string, at: number) => Math.abs(Date.parse(iso) - at);
  expect(off(job.started_at, startedAt), `started_at of ${job.id}`).toBeLessThanOrEqual(1000);
  expect(off(job.completed_at, endedAt), `completed_at of ${job.id}`).toBeLessThanOrEqual(1000);
  expect(Math.abs(job.metrics.execution_ms - (endedAt - startedAt)), `execution_ms of ${job.id}`).toBeLessThanOrEqual(1000);
}

/** SIGKILLs a worker and waits for its exit. */
async function kill(w: CliProcess): Promise<void> {
  if (w.child.exitCode === null && w.child.signalCode === null) {
    const closed = new Promise((r) => w.child.once("close", r));
    w.child.kill("SIGKILL");
    await closed;
  }
}

describe.skipIf(unavailable !== null)("a worker in front of ComfyUI dies holding a job (PostgreSQL)", () => {
  it("another worker collects the prompt ComfyUI finished meanwhile: succeeded with its outputs, run once", { timeout: 90_000 }, async () => {
    const { fake, api, first } = await deployment();
    fake.holding = true;
    const job = await api.submit(textGraph("finished-meanwhile"));
    await until(() => (fake.held === job.id ? true : undefined), "the prompt running in ComfyUI");
    const running = await d.waitForJob(job.id, (r) => r.status === "running", "the job running");
    expect(heldBy(running, first)).toBe(true);
    await kill(first);
    // ComfyUI finishes the prompt while no worker is alive.
    fake.release();
    await until(() => (fake.history.has(job.id) ? true : undefined), "ComfyUI to finish the prompt");
    expect((await d.job(job.id)).status).toBe("running");

    const second = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    const done = await api.waitJob(job.id, (j) => j.status !== "running", "the job to end", 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expect(done.outputs.map((o: { node_id: string }) => o.node_id)).toEqual(["2"]);
    expect(await fetch(done.outputs[0].url).then((r) => r.text())).toBe(`${job.id}:2`);
    // Its end is ComfyUI's, not the moment the second worker collected it.
    expectTimesOfDouble(done, fake);
    const row = await d.job(job.id);
    expect(heldBy(row, second)).toBe(true);
    expect(Number(row.lease_epoch)).toBe(2); // the first worker's claim, then the takeover's
    expect(second.stderr()).toContain(`job ${job.id}: the lease of the worker holding it (running) passed`);
    expect(fake.executions.get(job.id)).toBe(1);
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);
    expect(await d.outputs(job.id)).toHaveLength(1);
    expect(await d.violations()).toEqual([]);
  });

  it("another worker follows the prompt ComfyUI still runs to its end, run once", { timeout: 90_000 }, async () => {
    const { fake, api, first } = await deployment();
    fake.holding = true;
    const job = await api.submit(textGraph("still-running"));
    await until(() => (fake.held === job.id ? true : undefined), "the prompt running in ComfyUI");
    await d.waitForJob(job.id, (r) => r.status === "running" && heldBy(r, first), "the job running on the first worker");
    const second = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    await kill(first);
    // Taken over while ComfyUI still runs it: still running, under the second worker's claim.
    const adopted = await d.waitForJob(job.id, (r) => heldBy(r, second), "the second worker to take the job over");
    expect(adopted).toMatchObject({ status: "running", lease_epoch: "2" });
    expect(fake.held).toBe(job.id);
    fake.release();
    const done = await api.waitJob(job.id, (j) => j.status !== "running", "the job to end", 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expect(done.outputs.map((o: { node_id: string }) => o.node_id)).toEqual(["2"]);
    expect(fake.executions.get(job.id)).toBe(1);
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);
    expect(await d.violations()).toEqual([]);
  });

  it("another worker submits the prompt ComfyUI never received (claimed, never started): it runs once", { timeout: 90_000 }, async () => {
    // ComfyUI answers the first worker's POST /prompt 503 (a full queue: retried) until it has died.
    let refusing = true;
    const { fake, api, first } = await deployment({
      objectInfo: OBJECT_INFO,
      onPrompt: () => (refusing ? { status: 503, body: { error: "busy" } } : undefined),
    });
    const job = await api.submit(textGraph("never-received"));
    await until(() => (fake.calls("POST", "/prompt").length > 0 ? true : undefined), "the first worker to try to submit the prompt");
    const claimed = await d.waitForJob(job.id, (r) => heldBy(r, first), "the job claimed by the first worker");
    expect(claimed).toMatchObject({ status: "queued", started_at: null, lease_epoch: "1" });
    await kill(first);
    refusing = false;
    expect(fake.executions.has(job.id)).toBe(false);

    const second = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    const done = await api.waitJob(job.id, (j) => ["succeeded", "failed", "canceled"].includes(j.status), "the job to end", 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expect(heldBy(await d.job(job.id), second)).toBe(true);
    expect(second.stderr()).toContain(`job ${job.id}: the lease of the worker holding it (queued) passed`);
    expect(fake.executions.get(job.id)).toBe(1);
    expect(await d.violations()).toEqual([]);
  });

  it("a worker stopped (SIGTERM) while ComfyUI refuses its POST posts nothing more; the worker that takes the job over submits it: it runs once", {
    timeout: 90_000,
  }, async () => {
    // ComfyUI answers 503 (a full queue: the POST is retried) until the first worker has stopped.
    let refusing = true;
    const { fake, api, first } = await deployment({
      objectInfo: OBJECT_INFO,
      onPrompt: () => (refusing ? { status: 503, body: { error: "busy" } } : undefined),
    });
    const second = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    const job = await api.submit(textGraph("refused-then-stopped"));
    const claimed = await d.waitForJob(job.id, (r) => r.status === "queued" && (heldBy(r, first) || heldBy(r, second)), "the job claimed");
    const holder = heldBy(claimed, first) ? first : second;
    const survivor = holder === first ? second : first;
    const tries = fake.calls("POST", "/prompt").length;
    await until(() => (fake.calls("POST", "/prompt").length > tries ? true : undefined), "the holder to try to submit the prompt");
    const closed = new Promise((r) => holder.child.once("close", r));
    holder.child.kill("SIGTERM");
    await closed;
    // The stop did not wait for ComfyUI to take the prompt: the holder gave the job up as it was.
    expect(holder.child.exitCode).toBe(0);
    const posted = fake.calls("POST", "/prompt").length;
    refusing = false;
    const done = await api.waitJob(job.id, (j) => ["succeeded", "failed", "canceled"].includes(j.status), "the job to end", 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expect(heldBy(await d.job(job.id), survivor)).toBe(true);
    expect(fake.calls("POST", "/prompt").length).toBe(posted + 1);
    expect(fake.executions.get(job.id)).toBe(1);
    expect(await d.violations()).toEqual([]);
  });

  it("a job canceling when its worker died ends canceled, its prompt stopped in ComfyUI by the worker that took it over", { timeout: 90_000 }, async () => {
    const { fake, api, first } = await deployment({ objectInfo: OBJECT_INFO, interruptStatus: 500 });
    fake.holding = true;
    const job = await api.submit(textGraph("canceling"));
    await until(() => (fake.held === job.id ? true : undefined), "the prompt running in ComfyUI");
    await d.waitForJob(job.id, (r) => r.status === "running", "the job running");
    // ComfyUI fails the interrupt: the job stays canceling while the first worker waits for the prompt to stop.
    expect((await api.request("POST", `/api/v2/jobs/${job.id}/cancel`)).body.status).toBe("canceling");
    await until(() => (fake.calls("POST", "/interrupt").length > 0 ? true : undefined), "the interrupt asked");
    await kill(first);
    fake.interruptStatus = 200;
    const interrupts = fake.calls("POST", "/interrupt").length;

    await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    const done = await api.waitJob(job.id, (j) => j.status !== "canceling" && j.status !== "running", "the job to end", 30_000);
    expect(done.status).toBe("canceled");
    expect(fake.calls("POST", "/interrupt").length).toBeGreaterThan(interrupts);
    expect(fake.held).toBeNull();
    expect(fake.executions.get(job.id)).toBe(1);
    expect(await d.violations()).toEqual([]);
  });

  it("a worker paused past its lease leaves the prompt to the worker that took its job over, and writes nothing", { timeout: 90_000 }, async () => {
    const { fake, api, first } = await deployment();
    fake.holding = true;
    const job = await api.submit(textGraph("paused-holder"));
    await until(() => (fake.held === job.id ? true : undefined), "the prompt running in ComfyUI");
    await d.waitForJob(job.id, (r) => r.status === "running" && heldBy(r, first), "the job running on the first worker");
    const second = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    first.child.kill("SIGSTOP");
    cleanup.push(async () => void first.child.kill("SIGCONT"));
    await d.waitForJob(job.id, (r) => heldBy(r, second), "the second worker to take the job over");
    // Resumed, the first worker finds the job taken over (at its next renewal, or a refused write):
    // it stops following the prompt, untouched.
    first.child.kill("SIGCONT");
    await waitFor(
      () => first.stderr(),
      (err) => err.includes(`job ${job.id}: another worker took it over`) || err.includes(`job ${job.id}: a write of its run was refused`),
      "the first worker to let the job go",
    );
    expect(fake.calls("POST", "/interrupt")).toEqual([]);
    expect(fake.held).toBe(job.id);
    fake.release();
    const done = await api.waitJob(job.id, (j) => j.status !== "running", "the job to end", 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expect(heldBy(await d.job(job.id), second)).toBe(true);
    expect(fake.calls("POST", "/interrupt")).toEqual([]);
    expect(fake.executions.get(job.id)).toBe(1);
    expect(await d.outputs(job.id)).toHaveLength(1);
    expect(await d.violations()).toEqual([]);
  });
});

describe.skipIf(unavailable !== null)("both workers started before the jobs: the survivor takes over what ComfyUI holds (PostgreSQL)", () => {
  /**
   * Two workers connected to ComfyUI before any prompt reached it; the holder of the running prompt
   * (which holds pending ones too) is stopped by `stop`: the other worker takes its jobs over and
   * each prompt runs once, to success, none failed while ComfyUI runs it.
   */
  async function bothStartedFirst(stop: (holder: CliProcess) => Promise<void>, after?: (holder: CliProcess) => Promise<void>) {
    const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true }).start();
    cleanup.push(() => fake.stop());
    const { api } = await d.apiNode({ leaseMs: API_LEASE_MS, flags: comfyFlags(fake.url) });
    // Leases long enough that the survivor's own renewals hold on a busy machine (its jobs never lapse).
    const first = await d.worker({ leaseMs: BOTH_LEASE_MS, flags: comfyFlags(fake.url) });
    const second = await d.worker({ leaseMs: BOTH_LEASE_MS, flags: comfyFlags(fake.url) });
    fake.holding = true;
    const jobs: { id: string }[] = [];
    for (let i = 0; i < 5; i++) jobs.push(await api.submit(textGraph(`both-first-${i}`)));
    const running = await until(() => fake.held ?? undefined, "a prompt running in ComfyUI");
    const row = await d.waitForJob(running, (r) => r.status === "running", "the running job's row");
    const holder = heldBy(row, first) ? first : second;
    const survivor = holder === first ? second : first;
    // The holder of the running prompt holds a pending one there too (each worker takes as many as its concurrency).
    const holderJobs = await until(async () => {
      const ids = [];
      for (const j of jobs) if (heldBy(await d.job(j.id), holder)) ids.push(j.id);
      return ids.some((id) => fake.queue.pending.includes(id)) ? ids : undefined;
    }, "a pending prompt of the holder in ComfyUI");
    await stop(holder);
    for (const id of holderJobs) await d.waitForJob(id, (r) => heldBy(r, survivor), `job ${id} taken over`);
    await after?.(holder);
    // ComfyUI goes on with what it holds; nothing failed meanwhile.
    expect(fake.held).toBe(running);
    for (const j of jobs) expect((await d.job(j.id)).status, j.id).not.toBe("failed");
    fake.release();
    for (const j of jobs) {
      const done = await api.waitJob(j.id, (x) => ["succeeded", "failed", "canceled"].includes(x.status), `job ${j.id} to end`, 30_000);
      expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
      expect(fake.executions.get(j.id), `executions of ${j.id}`).toBe(1);
      expectTimesOfDouble(done, fake);
      expect(await d.outputs(j.id)).toHaveLength(1);
    }
    expect(fake.calls("POST", "/prompt")).toHaveLength(jobs.length);
    // Nothing was taken back out of ComfyUI: no copy deleted from its queue, none interrupted.
    expect(fake.calls("POST", "/queue")).toEqual([]);
    expect(fake.calls("POST", "/interrupt")).toEqual([]);
    expect(await d.violations()).toEqual([]);
  }

  it("SIGKILL of the worker whose prompt ComfyUI runs: each prompt runs once, none fails", { timeout: 120_000 }, async () => {
    await bothStartedFirst(kill);
  });

  it("SIGTERM of that worker: it leaves its prompts to ComfyUI and the survivor follows them; each runs once, none fails", { timeout: 120_000 }, async () => {
    // No grace (the deployment's workers have none): the stop comes while ComfyUI runs one of its prompts and holds another pending,
    // which a stop that took them back could race ComfyUI starting (run twice, or interrupted).
    await bothStartedFirst(
      async (holder) => {
        const closed = new Promise((r) => holder.child.once("close", r));
        holder.child.kill("SIGTERM");
        await closed;
        expect(holder.child.exitCode).toBe(0);
      },
      async (holder) => {
        expect(holder.stderr()).toContain("this process stops; the run goes on in the engine, left to whoever holds the job next");
      },
    );
  });

  it("SIGSTOP of that worker past its lease, then SIGCONT: each prompt runs once, the paused worker writes nothing", { timeout: 120_000 }, async () => {
    await bothStartedFirst(
      async (holder) => {
        holder.child.kill("SIGSTOP");
        cleanup.push(async () => void holder.child.kill("SIGCONT"));
      },
      async (holder) => {
        holder.child.kill("SIGCONT");
      },
    );
  });
});

describe.skipIf(unavailable !== null)("a worker stopped between its claim and its POST /prompt (PostgreSQL)", () => {
  it("finds the job taken over when it goes on, and never posts the prompt: it runs once, under the worker that took it over", {
    timeout: 120_000,
  }, async () => {
    // The first worker asks ComfyUI whether it holds the prompt (GET /history/{id}) right before
    // it posts it: it is stopped there, past its lease, and the answer waits for it.
    let first: CliProcess | undefined;
    let stopped = false;
    const fake = await new FakeComfyUI({
      objectInfo: OBJECT_INFO,
      worker: true,
      onRequest: (r) => {
        if (!stopped && first && r.method === "GET" && r.path.startsWith("/history/")) {
          stopped = true;
          first.child.kill("SIGSTOP");
        }
      },
    }).start();
    cleanup.push(() => fake.stop());
    const { api } = await d.apiNode({ leaseMs: API_LEASE_MS, flags: comfyFlags(fake.url) });
    first = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    cleanup.push(async () => void first!.child.kill("SIGCONT"));
    const job = await api.submit(textGraph("stopped-before-post"));
    await until(() => (stopped ? true : undefined), "the first worker stopped before its POST");
    expect(heldBy(await d.job(job.id), first)).toBe(true);

    const second = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    await d.waitForJob(job.id, (r) => heldBy(r, second), "the second worker to take the job over");
    const done = await api.waitJob(job.id, (j) => ["succeeded", "failed", "canceled"].includes(j.status), "the job to end", 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);

    // Resumed, the first worker finds its lease gone before it posts: it leaves the job alone.
    first.child.kill("SIGCONT");
    const gaveUp = `job ${job.id}: this worker no longer holds it`;
    await waitFor(
      () => first!.stderr(),
      (e) => e.includes(gaveUp) || fake.calls("POST", "/prompt").length > 1,
      "the first worker to give the job up (or to post the prompt again)",
    );
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);
    expect(first.stderr()).toContain(gaveUp);
    expect(fake.executions.get(job.id)).toBe(1);
    expect((await api.job(job.id)).status).toBe("succeeded");
    expect(await d.outputs(job.id)).toHaveLength(1);
    expect(await d.violations()).toEqual([]);
  });
});

describe.skipIf(unavailable !== null)("a worker stopped between its last lease renewal and its POST /prompt landing (PostgreSQL)", () => {
  it("its POST lands after the worker that took the job over posted: it takes its copy back out of ComfyUI's queue, the prompt runs once", {
    timeout: 120_000,
  }, async () => {
    // The first worker's POST (sent right after its renewal) reaches ComfyUI while it is stopped
    // past its lease, and lands only once the test lets it: after the second worker's.
    let first: CliProcess | undefined;
    let land: (() => void) | null = null;
    const fake = await new FakeComfyUI({
      objectInfo: OBJECT_INFO,
      worker: true,
      onRequest: async (r) => {
        if (land === null && first && r.method === "POST" && r.path === "/prompt") {
          first.child.kill("SIGSTOP");
          await new Promise<void>((resolve) => (land = resolve));
        }
      },
    }).start();
    cleanup.push(() => fake.stop());
    fake.holding = true;
    const { api } = await d.apiNode({ leaseMs: API_LEASE_MS, flags: comfyFlags(fake.url) });
    first = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    cleanup.push(async () => void first!.child.kill("SIGCONT"));
    const job = await api.submit(textGraph("stopped-after-renewal"));
    await until(() => (land !== null ? true : undefined), "the first worker stopped, its POST on the way");

    const second = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    await d.waitForJob(job.id, (r) => heldBy(r, second), "the second worker to take the job over");
    await until(() => (fake.held === job.id ? true : undefined), "the second worker's copy running in ComfyUI");
    land!();
    await until(() => (fake.queue.pending.includes(job.id) ? true : undefined), "the first worker's copy queued behind it");

    // Resumed, the first worker reads its POST's answer, finds its lease gone and takes its copy back.
    first.child.kill("SIGCONT");
    await waitFor(
      () => first!.stderr(),
      (e) => e.includes(`job ${job.id}: its prompt was posted after this worker lost the job`),
      "the first worker to find its lease gone after its POST",
    );
    expect(first.stderr()).toContain("this one was taken out of its queue");
    expect(fake.queue.pending).not.toContain(job.id);
    fake.release();
    const done = await api.waitJob(job.id, (j) => ["succeeded", "failed", "canceled"].includes(j.status), "the job to end", 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expect(heldBy(await d.job(job.id), second)).toBe(true);
    expect(fake.calls("POST", "/prompt")).toHaveLength(2);
    expect(fake.executions.get(job.id)).toBe(1);
    expect(await d.outputs(job.id)).toHaveLength(1);
    expect(await d.violations()).toEqual([]);
  });
});

describe.skipIf(unavailable !== null)("a worker stopped in the middle of a write on its job's row (PostgreSQL)", () => {
  /**
   * Holds the assets table, so that the first worker's next output write waits for it; stops the
   * worker while it waits, then lets the table go. Returns once the worker is stopped.
   */
  async function stopWhileWriting(first: CliProcess, release: () => void): Promise<void> {
    const locker = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await locker.connect();
    cleanup.push(() => locker.end());
    await locker.query("BEGIN");
    await locker.query(`LOCK TABLE ${d.schema}.assets IN EXCLUSIVE MODE`);
    release();
    await waitFor(
      () =>
        adminQuery(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace s ON s.oid = c.relnamespace
            WHERE NOT l.granted AND c.relname = 'assets' AND s.nspname = $1`,
          [d.schema],
        ),
      (rows) => Number(rows[0]!.n) > 0,
      "the first worker's output write to wait for the assets table",
      30_000,
    );
    first.child.kill("SIGSTOP");
    cleanup.push(async () => void first.child.kill("SIGCONT"));
    await locker.query("ROLLBACK");
  }

  it("inside an output record's transaction: the server ends it (idle past the lease, 5 s at least), so the job is taken over and collected, run once, nothing of the stopped worker kept", {
    timeout: 120_000,
  }, async () => {
    const { fake, api, first } = await deployment();
    fake.holding = true;
    // Two output nodes: the first one's record is written in a transaction of its own (the last
    // one's rides in the end's statement), which the stopped worker cannot commit.
    const job = await api.submit({ ...textGraph("stopped-mid-write"), "3": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } });
    await until(() => (fake.held === job.id ? true : undefined), "the prompt running in ComfyUI");
    await d.waitForJob(job.id, (r) => r.status === "running" && heldBy(r, first), "the job running on the first worker");
    // The adopter is up before the fault, as in a deployment: the API node's expiry sweep and the
    // adopter find the row free at the same moment, when the server ends the transaction.
    const second = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    await stopWhileWriting(first, () => fake.release());

    await d.waitForJob(job.id, (r) => heldBy(r, second), "the second worker to take the job over");
    const done = await api.waitJob(job.id, (j) => ["succeeded", "failed", "canceled"].includes(j.status), "the job to end", 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expectTimesOfDouble(done, fake);

    // Resumed, the first worker finds its transaction ended and the job taken over: it writes nothing.
    first.child.kill("SIGCONT");
    await waitFor(
      () => first.stderr(),
      (err) =>
        err.includes(`job ${job.id}: another worker took it over`) ||
        err.includes(`job ${job.id}: a write of its run was refused`) ||
        err.includes(`job ${job.id}: its end was not written: the run no longer holds its lease`),
      "the first worker to let the job go",
    );
    expect(fake.executions.get(job.id)).toBe(1);
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);
    expect((await api.job(job.id)).status).toBe("succeeded");
    expect(await d.outputs(job.id)).toHaveLength(2);
    expect(await d.violations()).toEqual([]);
  });

  it("with its end's statement sent: the end commits under the lease it held (one statement, nothing left open), nobody takes the job over, run once", {
    timeout: 120_000,
  }, async () => {
    const { fake, api, first } = await deployment();
    fake.holding = true;
    const job = await api.submit(textGraph("stopped-in-end"));
    await until(() => (fake.held === job.id ? true : undefined), "the prompt running in ComfyUI");
    await d.waitForJob(job.id, (r) => r.status === "running" && heldBy(r, first), "the job running on the first worker");
    await stopWhileWriting(first, () => fake.release());

    const ended = await d.waitForJob(job.id, (r) => r.status === "succeeded", "the end to commit while the worker is stopped");
    expect(heldBy(ended, first)).toBe(true);
    const second = await d.worker({ leaseMs: LEASE_MS, flags: comfyFlags(fake.url) });
    first.child.kill("SIGCONT");
    const done = await api.waitJob(job.id, (j) => ["succeeded", "failed", "canceled"].includes(j.status), "the job to end", 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expectTimesOfDouble(done, fake);
    expect(second.stderr()).not.toContain(job.id);
    expect(fake.executions.get(job.id)).toBe(1);
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);
    expect(await d.outputs(job.id)).toHaveLength(1);
    expect(await d.violations()).toEqual([]);
  });
});

describe.skipIf(unavailable !== null)("a worker on the embedded engine dies holding a job (PostgreSQL)", () => {
  it("the job still ends worker_lost once the lease passes, never run again", { timeout: 90_000 }, async () => {
    const { api } = await d.apiNode({ leaseMs: LEASE_MS });
    const first = await d.worker({ leaseMs: LEASE_MS });
    const job = await api.submit(delayedImageGraph(30, "embedded-lost"));
    await d.waitForJob(job.id, (r) => r.status === "running" && heldBy(r, first), "the job running on the first worker");
    const second = await d.worker({ leaseMs: LEASE_MS });
    await kill(first);
    const failed = await d.waitForJob(job.id, (r) => r.status === "failed", "the job failed worker_lost");
    expect((failed.error as { code: string }).code).toBe("worker_lost");
    expect(heldBy(failed, first)).toBe(true); // nobody took it over
    expect((await adminQuery(`SELECT resumable FROM ${d.schema}.jobs WHERE id = $1`, [job.id]))[0]!.resumable).toBe(false);
    expect(second.stderr()).not.toContain("took it over");
    expect(await d.outputs(job.id)).toEqual([]);
    expect(await d.violations()).toEqual([]);
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
