// A worker that loses its database for a while, through a TcpProxy of its own, while an API node
// keeps its own connection. An outage shorter than the lease is invisible to a run: the output it
// commits meanwhile is retried until the database returns, and the job succeeds. One longer than
// the lease ends the job worker_lost (an infrastructure code, never a workflow failure), logged
// where it ended, and the worker, back, writes nothing into it.
import { describe, expect, it } from "vitest";
import { postgresUnavailable } from "../postgres/pg.ts";
import { waitFor } from "../server/helpers.ts";
import { deploymentPerTest } from "./deployment.ts";
import { delayedImageGraph } from "../fixtures/graphs.ts";

const unavailable = await postgresUnavailable();

const d = deploymentPerTest(unavailable);

describe.skipIf(unavailable !== null)("a worker's database outage", () => {
  it("shorter than the lease: the output committed during it lands once the database is back, and the job succeeds", async () => {
    const LEASE_MS = 60_000;
    const { api } = await d.apiNode({ leaseMs: LEASE_MS });
    const { proxy, url } = await d.proxied();
    await d.worker({ leaseMs: LEASE_MS, url });
    const DELAY_S = 3;
    const job = await api.submit(delayedImageGraph(DELAY_S, "outage"));
    const running = await d.waitForJob(job.id, (r) => r.status === "running", "the job running");
    proxy.cut();
    expect(await d.outputs(job.id), "the output came before the outage: too slow a host for this test").toEqual([]);
    // The image is saved during the outage (the delay runs out), and its commit tried...
    await waitFor(
      () => Date.now(),
      (now) => now > Number(running.started_at) + DELAY_S * 1000 + 500,
      "the delay over",
    );
    // ...and tried again: the worker knocks at the cut database a few more times before it heals.
    const knocks = proxy.refused;
    await waitFor(
      () => proxy.refused,
      (n) => n >= knocks + 3,
      "reconnection attempts during the outage",
    );
    proxy.heal();
    const done = await d.waitForJob(job.id, (r) => ["succeeded", "failed", "canceled"].includes(r.status as string), "the job ended");
    expect(done.error).toBeNull();
    expect(done.status).toBe("succeeded");
    expect(await d.outputs(job.id)).toHaveLength(1);
    expect(await d.violations()).toEqual([]);
  });

  it("longer than the lease: the job ends worker_lost, logged with its cause, and the worker writes nothing into it after", async () => {
    const LEASE_MS = 1500;
    const { api, server } = await d.apiNode({ leaseMs: LEASE_MS });
    const { proxy, url } = await d.proxied();
    const w = await d.worker({ leaseMs: LEASE_MS, url });
    const job = await api.submit(delayedImageGraph(1, "outage"));
    await d.waitForJob(job.id, (r) => r.status === "running", "the job running");
    proxy.cut();
    const failed = await d.waitForJob(job.id, (r) => r.status === "failed", "the job failed");
    expect((failed.error as { code: string }).code).toBe("worker_lost");
    await waitFor(
      () => server.output(),
      (out) => out.includes(`job ${job.id}: ended failed worker_lost`),
      "the end logged by the API node",
    );
    proxy.heal();
    await waitFor(
      () => w.stderr(),
      (err) => err.includes(`job ${job.id}`) && /lease/.test(err),
      "the worker's refusal logged",
    );
    expect(await d.outputs(job.id)).toEqual([]);
    await waitFor(
      () => d.blobKeys(),
      (keys) => keys.length === 0,
      "the refused output's blob removed",
    );
    expect(await d.job(job.id)).toMatchObject({ status: "failed", completed_at: failed.completed_at });
    expect(await d.violations()).toEqual([]);
  });

  it("an API node without its database answers 500 upstream_error with Retry-After (both interfaces), logs the outage once, and answers 200 again once it is back", async () => {
    const { proxy, url } = await d.proxied();
    const { api, server } = await d.apiNode({ leaseMs: 30_000, url });
    const job = await api.submit(delayedImageGraph(1, "retry-after"));
    proxy.cut();
    for (const res of [await api.get(`/api/v2/jobs/${job.id}`), await api.post("/api/v2/jobs", { workflow: delayedImageGraph(1, "retry-after") })]) {
      expect(res.status, res.text).toBe(500);
      expect(res.body.error.code).toBe("upstream_error");
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    }
    // A prompt looked up during the outage is not "unknown" (404): the lookup failed.
    for (const hosted of [await api.get("/api/queue"), await api.get(`/api/job/${job.id}/status`), await api.get(`/api/jobs/${job.id}`)]) {
      expect(hosted.status, hosted.text).toBe(500);
      expect(hosted.headers.get("retry-after")).toMatch(/^\d+$/);
    }
    // The outage is logged once, without a stack; the requests it fails are not logged one by one.
    expect(server.output().match(/a dependency is unavailable/g)).toHaveLength(1);
    expect(server.output()).not.toContain("unexpected failure");
    const outageLine = server
      .output()
      .split("\n")
      .find((l) => l.includes("a dependency is unavailable"))!;
    const outage = JSON.parse(outageLine).err;
    expect(outage.type).not.toBe("Object");
    expect(outage).not.toHaveProperty("stack");
    proxy.heal();
    await waitFor(
      () => api.get(`/api/v2/jobs/${job.id}`),
      (r) => r.status === 200,
      "the job readable again",
    );
  });
});
