// The conformance suite against servers whose blobs live in a bucket (--blob-store s3://):
// a self-hosted server, and the scale-out deployment on PostgreSQL (two API nodes behind
// HAProxy, two workers) with no directory shared by any two processes. The bucket is s3rver on
// loopback (test/blobs/test-bucket.ts), or FLOWGATE_TEST_S3_BUCKET's endpoint. And a worker
// SIGKILLed in the middle of an output's upload leaves no object and no record.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runConformance } from "../../conformance/index.ts";
import { startTestServer, type TestServer } from "../hosted/hosted-server.ts";
import { adminQuery, postgresUnavailable } from "../postgres/pg.ts";
import { redisUnavailable, TEST_REDIS_URL } from "../postgres/redis.ts";
import { startDeployment } from "../server/postgres/deployment.ts";
import { haproxyUnavailable } from "../server/postgres/haproxy.ts";
import { startBucketProxy } from "../blobs/bucket-proxy.ts";
import { startTestBucket, withBucketEnv, type TestBucket } from "../blobs/test-bucket.ts";
import { imageGraph, waitFor } from "../server/helpers.ts";
import { samplerGraph } from "../fixtures/graphs.ts";
import { failureLines, FAST } from "./helpers.ts";

let bucket: TestBucket;
let restoreEnv: () => void;
beforeAll(async () => {
  bucket = await startTestBucket();
  restoreEnv = withBucketEnv(bucket);
});
afterAll(async () => {
  restoreEnv?.();
  await bucket?.stop();
});

const blobFlags = (sub: string) => ["--blob-store", `${bucket.url}${sub}`, ...(bucket.endpoint ? ["--s3-endpoint", bucket.endpoint] : [])];

describe("the contract with blobs in a bucket", () => {
  let server: TestServer | null = null;
  afterAll(async () => {
    await server?.stop();
  });

  it("self-hosted, with a static token", async () => {
    server = await startTestServer([
      ...blobFlags("self-hosted/"),
      "--surface",
      "self-hosted",
      "--token",
      "static-token",
      "--concurrency",
      "2",
      "--queue-limit",
      "6",
    ]);
    const report = await runConformance({ ...FAST, oversizeMb: 12, baseUrl: server.url, surface: "self-hosted", token: "static-token", fillQueue: 12 });
    expect(report.ok, failureLines(report)).toBe(true);
    expect((await bucket.objects()).some((k) => k.startsWith(`${bucket.prefix}self-hosted/`))).toBe(true);
  }, 300_000);
});

const unavailable = (await postgresUnavailable()) ?? (await redisUnavailable()) ?? (await haproxyUnavailable());

describe.skipIf(unavailable !== null)("the contract through HAProxy over two API nodes and two workers, blobs in a bucket, no shared directory", () => {
  it("self-hosted, with a static token", async () => {
    const d = await startDeployment({
      redisUrl: TEST_REDIS_URL,
      nodeFlags: ["--queue-limit", "6", "--token", "static-token"],
      blobStore: { url: `${bucket.url}deployment/`, endpoint: bucket.endpoint },
      env: bucket.env,
    });
    try {
      const report = await runConformance({ ...FAST, oversizeMb: 12, baseUrl: d.lb.url, surface: "self-hosted", token: "static-token", fillQueue: 12 });
      expect(report.ok, `${failureLines(report)}\n${report.ok ? "" : d.logs()}`).toBe(true);
      expect((await bucket.objects()).some((k) => k.startsWith(`${bucket.prefix}deployment/`))).toBe(true);
    } finally {
      await d.stop();
    }
  }, 180_000);
});

describe.skipIf(unavailable !== null)("small outputs on PostgreSQL with blobs in a bucket", () => {
  it("a small last output never goes to the bucket and is served by the API node; a large one is redirected to its object", async () => {
    const d = await startDeployment({
      nodes: 1,
      workers: 1,
      nodeFlags: ["--token", "static-token"],
      blobStore: { url: `${bucket.url}inline/`, endpoint: bucket.endpoint },
      env: bucket.env,
    });
    try {
      d.api.token = "static-token";
      const small = await d.api.waitTerminal((await d.api.submit(imageGraph("small"))).id, 30_000);
      const large = await d.api.waitTerminal((await d.api.submit(samplerGraph(1, "large", 256))).id, 30_000);
      expect([small.status, large.status]).toEqual(["succeeded", "succeeded"]);
      const [tiny, big] = [small.outputs[0], large.outputs[0]];
      const keyOf = (output: { hash: string }) => output.hash.slice("blake3:".length);
      const objects = (await bucket.objects()).filter((k) => k.startsWith(`${bucket.prefix}inline/`));
      expect(objects).toEqual([`${bucket.prefix}inline/${keyOf(big)}`]);
      // The outputs' signed links: the small one served by the node, the large one redirected to the bucket.
      const served = await fetch(tiny.url, { redirect: "manual" });
      expect([served.status, Buffer.from(await served.arrayBuffer()).length]).toEqual([200, tiny.size_bytes]);
      const redirected = await fetch(big.url, { redirect: "manual" });
      expect(redirected.status).toBe(302);
      const location = redirected.headers.get("location")!;
      expect(new URL(location).origin).not.toBe(new URL(big.url).origin);
      expect(Buffer.from(await (await fetch(location)).arrayBuffer()).length).toBe(big.size_bytes);
    } finally {
      await d.stop();
    }
  }, 180_000);
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);

describe.skipIf(unavailable !== null || !(!process.env.FLOWGATE_TEST_S3_BUCKET || (process.env.FLOWGATE_TEST_S3_ENDPOINT ?? "").startsWith("http:")))(
  "a worker SIGKILLed in the middle of an output's upload",
  () => {
    it("leaves no object and no record: its multipart upload is never completed", async () => {
      // Every process reaches the bucket through a proxy that holds the output's parts: the worker is killed while its upload is under way.
      const proxy = await startBucketProxy(bucket.endpoint!);
      const d = await startDeployment({
        nodes: 1,
        workers: 1,
        nodeFlags: ["--token", "static-token"],
        blobStore: { url: `${bucket.url}killed-worker/`, endpoint: proxy.endpoint },
        env: bucket.env,
      });
      try {
        d.api.token = "static-token";
        proxy.hold((method, url) => method === "PUT" && url.includes("partNumber="));
        // A text output over 8 MiB: it goes up as a multipart upload.
        const text = "flowgate ".repeat(1_000_000);
        const job = await d.api.submit({ "1": { class_type: "FlowgateSaveFile", inputs: { text, filename_prefix: "big", extension: "txt" } } });
        await waitFor(
          () => proxy.held,
          (n) => n > 0,
          "a part of the output's upload at the bucket",
          60_000,
        );
        const row = await d.row(job.id);
        const worker = d.workers[d.workerOf(row?.worker_id)]!;
        worker.child.kill("SIGKILL");
        await new Promise((r) => worker.child.once("close", r));
        proxy.drop();
        const ended = await d.api.waitTerminal(job.id, 30_000);
        expect(ended.outputs).toEqual([]);
        expect(await adminQuery(`SELECT count(*)::int AS n FROM ${d.schema}.assets WHERE job_id = $1`, [job.id])).toEqual([{ n: 0 }]);
        expect((await bucket.objects()).filter((k) => k.startsWith(`${bucket.prefix}killed-worker/`))).toEqual([]);
      } finally {
        await d.stop();
        await proxy.close();
      }
    }, 180_000);
  },
);
