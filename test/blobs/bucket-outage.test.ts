// A bucket outage pauses work instead of failing it: while object storage is unavailable no queued
// job starts (each would fail upstream_error at its first output), a running job's output commit
// waits for the bucket (bounded: past the bound the job ends upstream_error), and everything
// resumes by itself once the bucket answers. A frozen bucket (connections accepted, never
// answered) leaves readiness answering within its own short bound, and uploads and output
// commits giving up within theirs.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { Gates } from "../fixtures/gate-node.ts";
import { startTestServer, unique, upload, waitFor, type TestServer } from "../server/helpers.ts";
import { startBucketProxy, type BucketProxy } from "./bucket-proxy.ts";
import { startTestBucket, withBucketEnv, type TestBucket } from "./test-bucket.ts";

let bucket: TestBucket;
let restoreEnv: () => void;
const plainHttp = !process.env.FLOWGATE_TEST_S3_BUCKET || (process.env.FLOWGATE_TEST_S3_ENDPOINT ?? "").startsWith("http:");

beforeAll(async () => {
  bucket = await startTestBucket();
  restoreEnv = withBucketEnv(bucket);
});
afterAll(async () => {
  restoreEnv?.();
  await bucket?.stop();
});

let server: TestServer | undefined;
let proxy: BucketProxy | undefined;
afterEach(async () => {
  await server?.stop();
  await proxy?.close();
  server = undefined;
  proxy = undefined;
});

/** A server on the bucket through a proxy the test cuts, with gates its jobs can wait at. */
async function serve(gates: Gates, config: { blobWaitMs?: number; blobRequestMs?: number } = {}): Promise<TestServer> {
  proxy = await startBucketProxy(bucket.endpoint!);
  server = await startTestServer({
    flags: ["--blob-store", `${bucket.url}${unique("outage")}/`, "--s3-endpoint", proxy.endpoint, "--concurrency", "2"],
    engine: { extraNodes: [gates.node] },
    config,
  });
  return server;
}

/** An image that waits at gate `gate` before it is saved. */
function gatedImage(gate: string): Record<string, unknown> {
  return {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: Math.floor(Math.random() * 0xffffff) } },
    "2": { class_type: "TestGate", inputs: { value: ["1", 0], gate } },
    "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "outage" } },
  };
}

/** Waits until the server has knocked `n` more times at the cut bucket (its probe, once a second). */
async function knocks(p: BucketProxy, n: number): Promise<void> {
  const from = p.refused;
  await waitFor(
    () => p.refused,
    (now) => now >= from + n,
    `${n} attempts to reach the cut bucket`,
  );
}

describe.skipIf(!plainHttp)("a bucket outage", () => {
  it("queued jobs wait (they stay queued, none fails) and run by themselves once the bucket is back", async () => {
    const gates = new Gates();
    const s = await serve(gates);
    gates.open("go");
    proxy!.cut();
    await waitFor(
      () => s.api.get("/readyz"),
      (r) => r.status === 503 && r.body.checks.blobs === false,
      "not ready",
    );
    const refused = await upload(s.api, [{ name: "file", file: randomBytes(1000), filename: "during.bin" }]);
    expect(refused.status).toBe(500);
    expect(refused.headers.get("retry-after"), "an answer caused by the outage says when to retry").toMatch(/^\d+$/);
    const jobs = [];
    for (let i = 0; i < 4; i++) jobs.push(await s.api.submit(gatedImage("go")));
    await knocks(proxy!, 3);
    for (const job of jobs) expect((await s.api.job(job.id)).status, "a job started while the bucket was down").toBe("queued");

    proxy!.heal();
    for (const job of jobs) {
      const done = await s.api.waitTerminal(job.id);
      expect(done.error).toBeNull();
      expect(done.status).toBe("succeeded");
      expect(done.outputs).toHaveLength(1);
    }
    expect((await s.api.get("/readyz")).status).toBe(200);
  });

  it("a running job's output commit waits for the bucket, and the job succeeds once it is back", async () => {
    const gates = new Gates();
    const s = await serve(gates);
    const job = await s.api.submit(gatedImage("hold"));
    await s.api.waitJob(job.id, (j) => j.status === "running", "running");
    proxy!.cut();
    gates.open("hold"); // the output comes now, into the outage
    await knocks(proxy!, 8); // past the SDK's own 5 attempts of the put: the commit waits for the bucket
    expect((await s.api.job(job.id)).status).toBe("running");
    proxy!.heal();
    const done = await s.api.waitTerminal(job.id);
    expect(done.error).toBeNull();
    expect(done.status).toBe("succeeded");
    expect(done.outputs).toHaveLength(1);
  });

  it("past its bound the output commit gives up: the job ends upstream_error, and the next job runs once the bucket is back", async () => {
    const gates = new Gates();
    const s = await serve(gates, { blobWaitMs: 1_500 });
    const job = await s.api.submit(gatedImage("hold"));
    await s.api.waitJob(job.id, (j) => j.status === "running", "running");
    proxy!.cut();
    gates.open("hold");
    const failed = await s.api.waitTerminal(job.id, 30_000);
    expect(failed.status).toBe("failed");
    expect(failed.error.code).toBe("upstream_error");
    proxy!.heal();
    const next = await s.api.submit(gatedImage("hold"));
    const done = await s.api.waitTerminal(next.id);
    expect(done.status).toBe("succeeded");
  });

  it("a frozen bucket: /readyz answers 503 within its own bound, and answers 200 again once the bucket does", async () => {
    const s = await serve(new Gates());
    expect((await s.api.get("/readyz")).status).toBe(200);
    proxy!.hold(() => true);
    const ready = await s.api.get("/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.checks.blobs).toBe(false);
    proxy!.drop();
    await waitFor(
      () => s.api.get("/readyz"),
      (r) => r.status === 200,
      "ready again",
    );
    const up = await upload(s.api, [{ name: "file", file: randomBytes(1000), filename: "after.bin" }]);
    expect(up.status, up.text).toBe(201);
  });

  it("a frozen bucket: an upload and a running job's output commit give up at their bounds with the contract's error", async () => {
    const gates = new Gates();
    const s = await serve(gates, { blobRequestMs: 1_500, blobWaitMs: 1_500 });
    const job = await s.api.submit(gatedImage("hold"));
    await s.api.waitJob(job.id, (j) => j.status === "running", "running");
    proxy!.hold(() => true);
    gates.open("hold"); // the output comes now, into the freeze
    const refused = await upload(s.api, [{ name: "file", file: randomBytes(1000), filename: "frozen.bin" }]);
    expect(refused.status, refused.text).toBe(500);
    expect(refused.body.error.code).toBe("upstream_error");
    expect(refused.headers.get("retry-after"), "an answer caused by the freeze says when to retry").toMatch(/^\d+$/);
    const failed = await s.api.waitTerminal(job.id, 30_000);
    expect(failed.status).toBe("failed");
    expect(failed.error.code).toBe("upstream_error");
    proxy!.drop();
    await waitFor(
      () => s.api.get("/readyz"),
      (r) => r.status === 200,
      "ready again",
    );
  });
});
