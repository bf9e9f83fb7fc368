// A claim whose answer was lost: the worker's connection drops as its claim's answer comes back,
// so the job is running under its id while it never heard so. Reconnected, the worker reads back
// the jobs carrying its id and runs them: the job succeeds rather than failing worker_lost one
// lease later with both processes alive. The same for a claim that rode a run's end (one statement).
import { describe, expect, it } from "vitest";
import { postgresUnavailable } from "../postgres/pg.ts";
import { imageGraph } from "../server/helpers.ts";
import { deploymentPerTest } from "./deployment.ts";

const unavailable = await postgresUnavailable();
const LEASE_MS = 3000;

const d = deploymentPerTest(unavailable);

describe.skipIf(unavailable !== null)("a claim whose answer was lost", () => {
  it("is read back by the worker that made it, which runs the job", async () => {
    const { api } = await d.apiNode({ leaseMs: LEASE_MS });
    const { proxy, url } = await d.proxied();
    const w = await d.worker({ leaseMs: LEASE_MS, url });
    // The claim (one statement, named) that took a job (its row reads running) commits, and its answer is lost.
    const cut = proxy.loseAnswer(/fg_lease_claim/, /running/);
    const job = await api.submit(imageGraph("claimed"));
    await cut;
    const claimed = await d.waitForJob(job.id, (r) => r.status !== "queued", "the claim committed");
    expect(claimed.worker_id).not.toBeNull();
    proxy.heal();
    const done = await d.waitForJob(job.id, (r) => ["succeeded", "failed", "canceled"].includes(r.status as string), "the job ended");
    expect(done.error).toBeNull();
    expect(done.status).toBe("succeeded");
    expect(done.worker_id).toBe(claimed.worker_id);
    expect(await d.outputs(job.id)).toHaveLength(1);
    expect(w.stderr()).toContain(`job ${job.id}: claimed by this worker in a claim whose answer was lost`);
    expect(await d.violations()).toEqual([]);
  });

  it("is read back when it rode a run's end: both jobs succeed, each once", async () => {
    const { api } = await d.apiNode({ leaseMs: LEASE_MS });
    // Both queued before the worker starts, one slot: the first is claimed alone, the second by
    // the statement that writes the first's end.
    const first = await api.submit(imageGraph("ended"));
    const second = await api.submit(imageGraph("ridden"));
    const { proxy, url } = await d.proxied();
    const cut = proxy.loseAnswer(/fg_endJobsClaiming/, /running/);
    const w = await d.worker({ leaseMs: LEASE_MS, url, flags: ["--concurrency", "1"] });
    await cut;
    const ended = await d.waitForJob(first.id, (r) => r.status !== "running", "the first job's end committed");
    expect(ended.status).toBe("succeeded");
    const claimed = await d.waitForJob(second.id, (r) => r.status !== "queued", "the ride's claim committed");
    expect(claimed.worker_id).not.toBeNull();
    proxy.heal();
    const done = await d.waitForJob(second.id, (r) => ["succeeded", "failed", "canceled"].includes(r.status as string), "the second job ended");
    expect(done.error).toBeNull();
    expect(done.status).toBe("succeeded");
    expect(done.worker_id).toBe(claimed.worker_id);
    expect(await d.outputs(first.id)).toHaveLength(1);
    expect(await d.outputs(second.id)).toHaveLength(1);
    expect(w.stderr()).toContain(`job ${second.id}: claimed by this worker in a claim whose answer was lost`);
    expect(await d.violations()).toEqual([]);
  });
});
