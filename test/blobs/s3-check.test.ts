// What `check` (readiness, and the start-up line) says when the bucket cannot be used: a client
// configuration that cannot work names what is missing, rather than "cannot reach".
import { afterEach, describe, expect, it } from "vitest";
import { S3BlobStore } from "../../src/blobs/s3-blob-store.ts";

const KEYS = [
  "AWS_EC2_METADATA_DISABLED",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_PROFILE",
  "AWS_CONFIG_FILE",
  "AWS_SHARED_CREDENTIALS_FILE",
];
const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
afterEach(() => {
  for (const k of KEYS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

/** The message of `check` with exactly `env` set (no profile files). */
async function checkWith(env: Record<string, string>): Promise<string> {
  for (const k of KEYS) delete process.env[k];
  Object.assign(process.env, { AWS_EC2_METADATA_DISABLED: "true", AWS_CONFIG_FILE: "/nonexistent", AWS_SHARED_CREDENTIALS_FILE: "/nonexistent" }, env);
  const store = await S3BlobStore.open({ location: { bucket: "media", prefix: "p/" }, endpoint: "http://127.0.0.1:9" });
  try {
    await store.check();
    return "passed";
  } catch (err) {
    return (err as Error).message;
  } finally {
    await store.close();
  }
}

describe("S3BlobStore.check", () => {
  it("no region: says to set AWS_REGION, not that storage cannot be reached", async () => {
    const message = await checkWith({ AWS_ACCESS_KEY_ID: "k", AWS_SECRET_ACCESS_KEY: "s" });
    expect(message).toMatch(/needs a region: set AWS_REGION/);
    expect(message).not.toMatch(/cannot reach/);
  });

  it("no credentials: says which variables to set", async () => {
    const message = await checkWith({ AWS_REGION: "us-east-1" });
    expect(message).toMatch(/needs credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/);
  });

  it("nothing listening: cannot reach, where and why", async () => {
    const message = await checkWith({ AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: "k", AWS_SECRET_ACCESS_KEY: "s" });
    expect(message).toMatch(/^cannot reach object storage at 127\.0\.0\.1:9 \(bucket media: connection refused/);
  });
});
