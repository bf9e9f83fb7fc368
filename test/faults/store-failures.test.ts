// Store failures injected mid-dispatch (a seam over the running server's store): a failed
// start or a failed end of a run is retried until it lands, /readyz reports the failure
// meanwhile, and nothing ends the process (an unhandled rejection would fail this file).
import { afterEach, describe, expect, it } from "vitest";
import type { JobStatus, Store } from "../../src/store/index.ts";
import { delayGraph, imageGraph, SseClient, startTestServer, waitFor, type TestServer } from "../server/helpers.ts";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/**
 * Makes the store's transitions from → to fail while `failing.on` (transitionJob, and
 * transitionJobWithAssets, which ends a run with its last outputs); returns the switch.
 */
function failTransitions(store: Store, match: (from: readonly JobStatus[], to: JobStatus) => boolean): { on: boolean; hits: number } {
  const failing = { on: true, hits: 0 };
  const refuse = (from: readonly JobStatus[], to: JobStatus) => {
    if (!failing.on || !match(from, to)) return false;
    failing.hits++;
    return true;
  };
  const ioError = () => Promise.reject(Object.assign(new Error("disk I/O error"), { code: "ERR_SQLITE_ERROR", errcode: 10 }));
  const real = store.transitionJob.bind(store);
  store.transitionJob = (id, from, to, patch) => (refuse(from, to) ? ioError() : real(id, from, to, patch));
  const realWithAssets = store.transitionJobWithAssets.bind(store);
  store.transitionJobWithAssets = (id, from, to, patch, assets) => (refuse(from, to) ? ioError() : realWithAssets(id, from, to, patch, assets));
  return failing;
}

async function readiness(s: TestServer): Promise<{ status: number; body: any }> {
  const res = await s.api.get("/readyz");
  return { status: res.status, body: res.body };
}

describe("store failures mid-dispatch", () => {
  it("a start that fails to commit keeps the job queued, reports not ready, and is retried", async () => {
    server = await startTestServer({ flags: ["--concurrency", "1"] });
    const failing = failTransitions(server.runtime.store, (from, to) => from.includes("queued") && to === "running");
    const job = await server.api.submit(imageGraph("start-fails"));
    await waitFor(
      () => readiness(server!),
      (r) => r.status === 503 && r.body.checks.dispatch === false,
      "not ready",
    );
    expect(failing.hits).toBeGreaterThan(0);
    const waiting = await server.api.job(job.id);
    expect(waiting.status).toBe("queued");
    expect(waiting.queue_position).toBe(0);
    failing.on = false;
    expect((await server.api.waitTerminal(job.id)).status).toBe("succeeded");
    await waitFor(
      () => readiness(server!),
      (r) => r.status === 200,
      "ready again",
    );
  });

  it("an end that fails to commit is retried: the job does not stay running", async () => {
    server = await startTestServer({ flags: ["--concurrency", "1"] });
    const failing = failTransitions(server.runtime.store, (from, to) => from.includes("running") && to === "succeeded");
    const job = await server.api.submit(imageGraph("end-fails"));
    const next = await server.api.submit(imageGraph("after-it"));
    await waitFor(
      () => readiness(server!),
      (r) => r.status === 503 && r.body.checks.dispatch === false,
      "not ready",
    );
    expect((await server.api.job(job.id)).status).toBe("running");
    failing.on = false;
    const done = await server.api.waitTerminal(job.id);
    expect(done.status).toBe("succeeded");
    expect(done.outputs).toHaveLength(1);
    expect((await server.api.waitTerminal(next.id)).status).toBe("succeeded");
    await waitFor(
      () => readiness(server!),
      (r) => r.status === 200,
      "ready again",
    );
  });

  it("a cancel whose end fails to commit still ends canceled once the store recovers", async () => {
    server = await startTestServer();
    const job = await server.api.submit(delayGraph(600));
    await server.api.waitJob(job.id, (j) => j.status === "running", "running");
    const failing = failTransitions(server.runtime.store, (from, to) => from.includes("canceling") && to === "canceled");
    expect((await server.api.post(`/api/v2/jobs/${job.id}/cancel`)).body.status).toBe("canceling");
    await waitFor(
      () => failing.hits,
      (n) => n > 0,
      "the failed end",
    );
    failing.on = false;
    expect((await server.api.waitTerminal(job.id)).status).toBe("canceled");
  });

  it("an event stream whose first read fails ends instead of ending the process", async () => {
    server = await startTestServer();
    const job = await server.api.submit(delayGraph(600));
    await server.api.waitJob(job.id, (j) => j.status === "running", "running");
    const store = server.runtime.store;
    const getJob = store.getJob.bind(store);
    let reads = 0;
    // The stream's handler reads the job once, then the greeting reads it again: fail that one.
    store.getJob = (id) => (++reads === 2 ? Promise.reject(new Error("disk I/O error")) : getJob(id));
    const broken = new SseClient(`${server.url}/api/v2/jobs/${job.id}/events`);
    await broken.done;
    expect(broken.ended).toBe(true);
    store.getJob = getJob;
    const stream = new SseClient(`${server.url}/api/v2/jobs/${job.id}/events`);
    await stream.waitUntil((c) => c.of("status").length > 0, "the snapshot");
    await server.api.post(`/api/v2/jobs/${job.id}/cancel`);
    await stream.waitUntil((c) => c.ended, "the end of the stream");
    expect(stream.of("status").at(-1)?.json.status).toBe("canceled");
  });
});
