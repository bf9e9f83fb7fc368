// A worker stopped (SIGTERM, as a deploy stops it) while the statement that writes its run's end
// and claims the next job for that slot is on its way to the database: the end lands, and the job
// the statement claimed for a worker that is stopping is given up at once (not a lease later: it
// never reached the engine), so nothing stays running under a worker that is gone.
import { describe, expect, it } from "vitest";
import { postgresUnavailable } from "../postgres/pg.ts";
import { imageGraph, waitFor } from "../server/helpers.ts";
import { deploymentPerTest } from "./deployment.ts";

const unavailable = await postgresUnavailable();
/** Far longer than the test waits for anything: a job left to its lease would time the test out. */
const LEASE_MS = 120_000;
const TERMINAL = ["succeeded", "failed", "canceled", "expired"];

const d = deploymentPerTest(unavailable);

describe.skipIf(unavailable !== null)("a worker stopped while a claim rides its run's end", () => {
  it("writes the end, gives the job it claimed up at once, and exits", async () => {
    const { api } = await d.apiNode({ leaseMs: LEASE_MS });
    // Both queued before the worker starts, one slot: the first is claimed alone, the second by
    // the statement that writes the first's end.
    const first = await api.submit(imageGraph("ended"));
    const second = await api.submit(imageGraph("given-up"));
    const { proxy, url } = await d.proxied();
    const held = proxy.stallMatching(/fg_endJobsClaiming/);
    const w = await d.worker({ leaseMs: LEASE_MS, url, flags: ["--concurrency", "1"] });
    await held;
    expect((await d.job(first.id)).status).toBe("running");
    expect((await d.job(second.id)).status).toBe("queued");
    w.child.kill("SIGTERM");
    // The stop waits for the run's end, which waits in the proxy; let it through once it began.
    await waitFor(
      () => w.stdout(),
      (out) => out.includes("worker stopping: claiming no more jobs"),
      "the worker to begin its stop",
    );
    proxy.heal();
    const result = await w.exited;
    expect(result.code).toBe(0);
    const ended = await d.waitForJob(first.id, (r) => TERMINAL.includes(r.status as string), "the first job's end");
    expect(ended.status).toBe("succeeded");
    expect(await d.outputs(first.id)).toHaveLength(1);
    // Claimed by the statement as the worker stopped: it never ran, and ends now, not a lease later.
    const given = await d.waitForJob(second.id, (r) => TERMINAL.includes(r.status as string), "the claimed job to end", 30_000);
    expect(given.status).toBe("failed");
    expect((given.error as { code?: string } | null)?.code).toBe("worker_lost");
    expect(await d.violations()).toEqual([]);
  });
});
