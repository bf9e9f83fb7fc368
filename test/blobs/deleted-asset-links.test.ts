// A presigned link on the bucket, once handed out, cannot be revoked: what it serves after its
// asset is deleted depends on whether the object goes with the asset. Against the real
// S3-protocol server: the object goes (the link answers 404) when no other record holds the same
// bytes and the object was last written more than the touch margin (10 min) ago; it stays (the
// link keeps working until it expires) while another record holds the bytes, or when the object
// is younger than the margin (a concurrent upload may be reusing it), until the orphan sweep
// removes it an hour after its last write.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { S3_TOUCH_MARGIN_MS } from "../../src/blobs/s3-blob-store.ts";
import { startTestServer, unique, upload, type TestServer } from "../server/helpers.ts";
import { startTestBucket, withBucketEnv, type TestBucket } from "./test-bucket.ts";

let bucket: TestBucket;
let restoreEnv: () => void;
let s: TestServer;
beforeAll(async () => {
  bucket = await startTestBucket();
  restoreEnv = withBucketEnv(bucket);
  s = await startTestServer({ flags: ["--blob-store", `${bucket.url}${unique("deleted")}/`, ...(bucket.endpoint ? ["--s3-endpoint", bucket.endpoint] : [])] });
});
afterAll(async () => {
  await s?.stop();
  restoreEnv?.();
  await bucket?.stop();
});

/** Uploads `bytes` as an asset: its id. */
async function asset(bytes: Buffer): Promise<string> {
  const res = await upload(s.api, [{ name: "file", file: bytes, filename: "a.bin" }]);
  expect(res.status, res.text).toBeLessThan(300);
  return res.body.id;
}

/** The presigned GET the content route redirects to, with the caller's credentials. */
async function presigned(id: string): Promise<string> {
  const res = await fetch(`${s.url}/api/v2/assets/${id}/content`, { redirect: "manual" });
  expect(res.status).toBe(302);
  const location = res.headers.get("location")!;
  expect(location.startsWith(s.url)).toBe(false); // the bucket's, not flowgate's
  return location;
}

async function del(id: string): Promise<void> {
  expect((await s.api.request("DELETE", `/api/v2/assets/${id}`)).status).toBe(204);
}

describe("presigned links of a deleted asset", () => {
  // First: the tests after it move the server's clock past the margin.
  it("an object written within the touch margin stays after its asset is deleted: the link serves it until the orphan sweep", async () => {
    const id = await asset(randomBytes(2000));
    const link = await presigned(id);
    await del(id);
    const after = await fetch(link);
    expect(after.status).toBe(200);
    await after.body?.cancel();
  });
  it("the object goes with the last record that holds it: the link answers 404", async () => {
    const id = await asset(randomBytes(2000));
    const link = await presigned(id);
    expect((await fetch(link)).status).toBe(200);
    s.clock.advance(S3_TOUCH_MARGIN_MS + 60_000); // the object is older than the margin
    await del(id);
    const after = await fetch(link);
    expect(after.status).toBe(404);
    await after.body?.cancel();
  });

  it("while another record holds the same bytes, the link keeps serving them", async () => {
    const bytes = randomBytes(2000);
    const [first, second] = [await asset(bytes), await asset(bytes)];
    const link = await presigned(first);
    s.clock.advance(S3_TOUCH_MARGIN_MS + 60_000);
    await del(first);
    expect(Buffer.from(await (await fetch(link)).arrayBuffer()).equals(bytes)).toBe(true);
    await del(second);
    expect((await fetch(link)).status).toBe(404);
  });
});
