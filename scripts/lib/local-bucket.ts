// An S3 bucket on loopback for `npm run chaos`: s3rver (the S3 REST protocol over a directory).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";

/** A running s3rver with one bucket. */
export interface LocalBucket {
  endpoint: string;
  /** `s3://bucket/` for --blob-store. */
  url: string;
  /** What a flowgate process needs to reach it (s3rver takes any credentials). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Starts s3rver on loopback with the bucket `flowgate-chaos`, its objects in a temporary directory. */
export async function startLocalBucket(): Promise<LocalBucket> {
  const directory = await mkdtemp(join(tmpdir(), "flowgate-chaos-s3-"));
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: "flowgate-chaos" }] });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    url: "s3://flowgate-chaos/",
    env: { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_REGION: "us-east-1" },
    async stop() {
      server.httpServer.closeAllConnections();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
