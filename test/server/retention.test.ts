// Retention with the server's injected clock and the reaper (reapOnce): jobs and their outputs
// are readable until expires_at, a live job at its deadline becomes expired, and afterwards the
// job, its outputs and uploads are gone (404) with the blobs no record refers to.
import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { reapOnce } from "../../src/jobs/retention.ts";
import {
  blobStored,
  delayGraph,
  expectError,
  expectSseEventsValid,
  HOUR,
  imageGraph,
  SseClient,
  startTestServer,
  upload,
  v,
  waitFor,
  type TestServer,
} from "./helpers.ts";

let s: TestServer;
beforeEach(async () => {
  // Links outlive the jobs here, so that a link to a gone output can be followed.
  s = await startTestServer({ flags: ["--retention", "1h", "--concurrency", "1"], config: { urlTtlMs: 3 * HOUR } });
});
afterEach(async () => {
  await s?.stop();
});

const reap = () => reapOnce({ store: s.runtime.store, blobs: s.runtime.blobs, dispatcher: s.runtime.dispatcher, events: s.runtime.events, now: s.clock.now });
const stored = (hash: string) => blobStored(s.runtime.blobs, hash.replace(/^blake3:/, ""));

describe("retention", () => {
  it("GEN-4 JOB-3 a finished job and its outputs stay readable until expires_at, then are 404 and purged", async () => {
    const job = await s.api.submit(imageGraph("kept"));
    const done = await s.api.waitTerminal(job.id);
    expect(Date.parse(done.expires_at) - Date.parse(done.created_at)).toBe(HOUR);
    const out = done.outputs[0];
    // A last output is staged: its file is named once synced, just after the job's end (on
    // PostgreSQL its bytes are in the database, written with the end).
    expect(
      await waitFor(
        () => stored(out.hash),
        (named) => named,
        "the output's blob file",
      ),
    ).toBe(true);

    s.clock.advance(HOUR - 60_000);
    expect((await reap()).purged).toBe(0);
    expect((await s.api.job(job.id)).outputs).toHaveLength(1);
    expect((await s.api.get(`/api/v2/assets/${out.id}`)).status).toBe(200);
    expect((await fetch((await s.api.get(`/api/v2/assets/${out.id}`)).body.url)).status).toBe(200);

    s.clock.advance(60_000);
    // Past expires_at the job is gone at once, before the reaper even runs.
    expectError(await s.api.get(`/api/v2/jobs/${job.id}`), 404, "not_found", v.response_getJob_404);
    expectError(await s.api.get(`/api/v2/assets/${out.id}`), 404, "not_found", v.response_getAsset_404);
    expect((await fetch(out.url)).status).toBe(404);
    const listed = await s.api.get("/api/v2/jobs?limit=100");
    expect(listed.body.jobs.map((j: any) => j.id)).not.toContain(job.id);

    const r = await reap();
    expect(r.purged).toBeGreaterThanOrEqual(1);
    expect(await s.runtime.store.getJob(job.id)).toBeNull();
    expect(await s.runtime.store.getAsset(out.id)).toBeNull();
    expect(await stored(out.hash)).toBe(false);
    expectError(await s.api.get(`/api/v2/jobs/${job.id}/workflow`), 404, "not_found");
  });

  it("ST-3 a running job at its deadline becomes expired: the stream sees it, the run stops, then 404", async () => {
    const job = await s.api.submit(delayGraph(600));
    await s.api.waitJob(job.id, (j) => j.status === "running", "running");
    const waiting = await s.api.submit(delayGraph(600));
    const stream = new SseClient(`${s.url}/api/v2/jobs/${job.id}/events`);
    await stream.waitUntil((c) => c.of("status").length >= 1, "snapshot");

    const published: string[] = [];
    const unsubscribe = s.runtime.events.subscribe(job.id, (e) => void (e.type === "status" && published.push(e.job.status)));
    s.clock.advance(HOUR);
    const r = await reap();
    expect(r.expired).toBe(2);
    await stream.done;
    const statuses = stream.of("status").map((e) => e.json);
    expect(statuses.map((j) => j.status)).toEqual(["running", "expired"]);
    expectSseEventsValid(stream.events);
    expect(statuses[1].completed_at).not.toBeNull();
    expect(statuses[1].error).toBeNull();

    // The run was stopped and the queued job never started.
    await waitForIdle(s);
    expect(s.runtime.dispatcher.waiting).toBe(0);
    expect(await s.runtime.store.getJob(waiting.id)).toBeNull();
    expectError(await s.api.get(`/api/v2/jobs/${job.id}`), 404, "not_found");
    expectError(await s.api.post(`/api/v2/jobs/${job.id}/cancel`), 404, "not_found");
    // ST-4: the aborted run did not move the expired job on (no later status).
    unsubscribe();
    expect(published).toEqual(["expired"]);
    expect(s.app.eventStreams.size).toBe(0);
  });

  it("ST-3 a queue deeper than one expiry batch expires whole, and the dispatcher lets every job go", async () => {
    const running = await s.api.submit(delayGraph(600));
    await s.api.waitJob(running.id, (j) => j.status === "running", "running");
    const count = 520; // over the reaper's batch of 500
    for (let i = 0; i < count; i += 40) await Promise.all(Array.from({ length: Math.min(40, count - i) }, () => s.api.submit(delayGraph(600))));
    expect(s.runtime.dispatcher.waiting).toBe(count);
    s.clock.advance(HOUR);
    expect((await reap()).expired).toBe(count + 1);
    await waitForIdle(s);
    expect(s.runtime.dispatcher.waiting).toBe(0);
    expect(await s.runtime.queue.liveCount("")).toBe(0);
    expect(await s.runtime.store.countQueued()).toBe(0);
  });

  it("uploads expire too; a blob still referenced by a live record is kept", async () => {
    const shared = randomBytes(512);
    const lone = randomBytes(512);
    const a = await upload(s.api, [{ name: "file", file: shared }]);
    const b = await upload(s.api, [{ name: "file", file: lone }]);
    s.clock.advance(30 * 60_000);
    const c = await upload(s.api, [{ name: "file", file: shared }]);
    expect(c.status).toBe(200);
    s.clock.advance(30 * 60_000);
    expectError(await s.api.get(`/api/v2/assets/${a.body.id}`), 404, "not_found");
    await reap();
    expect(await stored(b.body.hash)).toBe(false);
    expect(await stored(a.body.hash)).toBe(true);
    const still = await s.api.get(`/api/v2/assets/${c.body.id}`);
    expect(still.status).toBe(200);
    expect(Buffer.from(await (await fetch(still.body.url)).arrayBuffer()).equals(shared)).toBe(true);
    expect((await s.api.request("HEAD", `/api/v2/assets/by-hash/${b.body.hash}`)).status).toBe(404);
  });

  it("an expired upload cannot be reused by hash, even before the reaper runs", async () => {
    const bytes = randomBytes(256);
    const up = await upload(s.api, [{ name: "file", file: bytes }]);
    expect((await s.api.request("HEAD", `/api/v2/assets/by-hash/${up.body.hash}`)).status).toBe(200);
    s.clock.advance(HOUR);
    expectError(await s.api.get(`/api/v2/assets/${up.body.id}`), 404, "not_found");
    expect((await s.api.request("HEAD", `/api/v2/assets/by-hash/${up.body.hash}`)).status).toBe(404);
    expectError(await s.api.post("/api/v2/assets/from-hash", { hash: up.body.hash }), 404, "blob_not_found", v.response_createAssetFromHash_404);
    await reap();
    expect(await stored(up.body.hash)).toBe(false);
  });

  it("the reaper started by the server runs on its interval", async () => {
    const auto = await startTestServer({ flags: ["--retention", "1h"], config: { reaperIntervalMs: 20 } });
    try {
      const job = await auto.api.submit(imageGraph("auto"));
      await auto.api.waitTerminal(job.id);
      auto.clock.advance(HOUR);
      await waitFor(
        () => auto.runtime.store.getJob(job.id),
        (j) => j === null,
        "purged by the background reaper",
      );
    } finally {
      await auto.stop();
    }
  });
});

async function waitForIdle(server: TestServer): Promise<void> {
  await waitFor(
    () => server.runtime.queue.running(),
    (n) => n === 0,
    "no run in flight",
  );
}
