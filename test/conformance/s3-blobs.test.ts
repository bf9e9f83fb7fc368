// The conformance suite against servers whose blobs live in a bucket (--blob-store s3://):
// a self-hosted server, and the scale-out deployment on PostgreSQL (two API nodes behind
// HAProxy, two workers) with no directory shared by any two processes. The bucket is s3rver on
// loopback (test/blobs/test-bucket.ts), or FLOWGATE_TEST_S3_BUCKET's endpoint.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runConformance } from "../../conformance/index.ts";
import { startTestServer, type TestServer } from "../hosted/hosted-server.ts";
import { postgresUnavailable } from "../postgres/pg.ts";
import { redisUnavailable, TEST_REDIS_URL } from "../postgres/redis.ts";
import { startDeployment } from "../server/postgres/deployment.ts";
import { haproxyUnavailable } from "../server/postgres/haproxy.ts";
import { startTestBucket, withBucketEnv, type TestBucket } from "../blobs/test-bucket.ts";
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
    server = await startTestServer([...blobFlags("self-hosted/"), "--surface", "self-hosted", "--token", "static-token", "--concurrency", "2", "--queue-limit", "6"]);
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

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
