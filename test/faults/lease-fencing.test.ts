// A worker paused (SIGSTOP) well past its lease while its job's delay runs out: another process
// ends the job worker_lost; resumed (SIGCONT), the worker's run finds every write of its refused
// by the database (the lease it names is gone), aborts, and leaves nothing in the finished job:
// no output record, no blob file. Its lease renewals are stalled meanwhile (a partition of that
// connection alone), so that the heartbeat cannot tell the run before it writes: the fence must.
import { describe, expect, it } from "vitest";
import { postgresUnavailable } from "../postgres/pg.ts";
import { waitFor } from "../server/helpers.ts";
import { deploymentPerTest } from "./deployment.ts";
import { delayedImageGraph } from "../fixtures/graphs.ts";

const unavailable = await postgresUnavailable();
const LEASE_MS = 1000;

/** An image that waits `seconds` before it is saved. */
const d = deploymentPerTest(unavailable);

describe.skipIf(unavailable !== null)("a worker fenced by its lease", () => {
  it("writes nothing into a job ended worker_lost while it was paused, and aborts the run", async () => {
    const { api } = await d.apiNode({ leaseMs: LEASE_MS });
    const { proxy, url } = await d.proxied();
    const w = await d.worker({ leaseMs: LEASE_MS, url });
    const DELAY_S = 2;
    const job = await api.submit(delayedImageGraph(DELAY_S, "fenced"));
    const running = await d.waitForJob(job.id, (r) => r.status === "running", "the job running");
    proxy.stallMatching(/UPDATE jobs SET worker_id = \$1, lease_until/);
    w.child.kill("SIGSTOP");
    // The API node's heartbeat ends it once the lease passes.
    const failed = await d.waitForJob(job.id, (r) => r.status === "failed", "the job failed worker_lost");
    expect((failed.error as { code: string }).code).toBe("worker_lost");
    // Well past the delay too: resumed, the run's delay is over at once and its image is saved.
    await waitFor(
      () => Date.now(),
      (now) => now > Number(running.started_at) + DELAY_S * 1000 + 500,
      "the delay over",
    );
    w.child.kill("SIGCONT");
    const aborted = (err: string) => err.includes(`job ${job.id}`) && /lease/.test(err);
    // Either the run aborts (and says so), or (the defect) its output lands in the finished job.
    await waitFor(async () => aborted(w.stderr()) || (await d.outputs(job.id)).length > 0, Boolean, "the worker's abort logged");
    expect(await d.outputs(job.id)).toEqual([]);
    expect(aborted(w.stderr())).toBe(true);
    expect(await d.blobKeys()).toEqual([]);
    expect(await d.job(job.id)).toMatchObject({ status: "failed", completed_at: failed.completed_at });
    expect(await d.violations()).toEqual([]);
  });
});
