// The bucket S3 tests run against: s3rver (the S3 REST protocol over a directory), started on
// loopback by the test; or, with FLOWGATE_TEST_S3_BUCKET set, any other S3 endpoint (MinIO,
// R2, AWS), credentials and region taken from the AWS_* variables as the SDK takes them.
//
//   FLOWGATE_TEST_S3_BUCKET=flowgate-test FLOWGATE_TEST_S3_ENDPOINT=http://127.0.0.1:9000 \
//   AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... AWS_REGION=us-east-1 npx vitest run test/blobs/s3*.test.ts
//
// s3rver does NOT verify SigV4 signatures (an altered signature or a wrong secret is accepted):
// against it a test can check a presigned URL's own parameters and its expiry (s3rver refuses
// expired links), never that a tampered link fails. Against another endpoint it can.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteObjectsCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";

/** A bucket and a prefix of this test run's own. */
export interface TestBucket {
  /** The endpoint, or null for AWS itself. */
  endpoint: string | null;
  bucket: string;
  /** A fresh prefix under which this run's objects live (ends in "/"). */
  prefix: string;
  /** `s3://bucket/prefix` for --blob-store. */
  url: string;
  /** Whether this is s3rver (signatures unchecked). */
  s3rver: boolean;
  /** Environment a flowgate process needs to reach it (credentials, region). */
  env: Record<string, string>;
  /** A client for looking at the bucket directly. */
  client: S3Client;
  /** Every object key under the prefix. */
  objects(): Promise<string[]>;
  stop(): Promise<void>;
}

/** Starts s3rver on loopback, or takes the bucket FLOWGATE_TEST_S3_BUCKET names. */
export async function startTestBucket(): Promise<TestBucket> {
  const external = process.env.FLOWGATE_TEST_S3_BUCKET;
  const prefix = `t-${randomUUID()}/`;
  if (external) {
    const endpoint = process.env.FLOWGATE_TEST_S3_ENDPOINT || null;
    const client = new S3Client({ ...(endpoint ? { endpoint, forcePathStyle: true } : {}) });
    return bucketOver({ endpoint, bucket: external, prefix, s3rver: false, env: {}, client, stop: async () => undefined });
  }
  const directory = await mkdtemp(join(tmpdir(), "flowgate-s3rver-"));
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: "flowgate-test" }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const env = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_REGION: "us-east-1" };
  const client = new S3Client({
    endpoint,
    forcePathStyle: true,
    region: env.AWS_REGION,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY },
  });
  return bucketOver({
    endpoint,
    bucket: "flowgate-test",
    prefix,
    s3rver: true,
    env,
    client,
    stop: async () => {
      server.httpServer.closeAllConnections();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  });
}

function bucketOver(b: Omit<TestBucket, "url" | "objects">): TestBucket {
  const objects = async (): Promise<string[]> => {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await b.client.send(new ListObjectsV2Command({ Bucket: b.bucket, Prefix: b.prefix, ...(token ? { ContinuationToken: token } : {}) }));
      for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  };
  return {
    ...b,
    url: `s3://${b.bucket}/${b.prefix}`,
    objects,
    stop: async () => {
      // What a run leaves on a shared bucket goes.
      const keys = await objects().catch(() => []);
      for (let i = 0; i < keys.length; i += 1000) {
        await b.client
          .send(new DeleteObjectsCommand({ Bucket: b.bucket, Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })) } }))
          .catch(() => undefined);
      }
      b.client.destroy();
      await b.stop();
    },
  };
}

/** Environment variables that configure the SDK's defaults for this bucket (set them for an in-process server). */
export function withBucketEnv(bucket: TestBucket): () => void {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(bucket.env)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}
