// A server with --blob-store s3://: uploads and outputs land in the bucket (test-bucket.ts:
// s3rver on loopback, which does not verify signatures, or FLOWGATE_TEST_S3_BUCKET's endpoint),
// downloads are 302s to presigned GETs that need no flowgate credential (and never carry it),
// --blob-proxy streams instead, retention deletes objects, and a bucket cut off is 500
// upstream_error and /readyz 503 until it is back, by itself.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { reapOnce } from "../../src/jobs/retention.ts";
import { HOUR, expectError, imageGraph, startTestServer, upload, waitFor, type TestServer } from "../server/helpers.ts";
import { startBucketProxy, type BucketProxy } from "./bucket-proxy.ts";
import { startTestBucket, withBucketEnv, type TestBucket } from "./test-bucket.ts";

const TOKEN = "s3-test-token-0123456789";
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

let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

/** A server on the bucket under a prefix of its own. */
async function serve(sub: string, flags: string[] = [], endpoint = bucket.endpoint): Promise<TestServer> {
  s = await startTestServer({
    flags: ["--blob-store", `${bucket.url}${sub}`, ...(endpoint ? ["--s3-endpoint", endpoint] : []), "--token", TOKEN, "--retention", "1h", ...flags],
  });
  s.api.token = TOKEN;
  return s;
}

const objectsUnder = async (sub: string) =>
  (await bucket.objects()).filter((k) => k.startsWith(`${bucket.prefix}${sub}`)).map((k) => k.slice(bucket.prefix.length + sub.length));

describe("downloads from a bucket", () => {
  it("an upload lands in the bucket under its blake3; the content route and the asset's link redirect to a presigned GET that needs no credential", async () => {
    const server = await serve("direct/");
    const bytes = randomBytes(200_000);
    const up = await upload(server.api, [
      { name: "file_path", value: "photos/cat.png" },
      { name: "content_type", value: "image/png" },
      { name: "file", file: bytes, filename: "cat.png" },
    ]);
    expect(up.status, up.text).toBe(201);
    const key = up.body.hash.slice("blake3:".length);
    expect(await objectsUnder("direct/")).toEqual([key]);

    // With the caller's credential: straight to the bucket.
    const direct = await server.api.get(`/api/v2/assets/${up.body.id}/content`);
    expect(direct.status).toBe(302);
    const location = new URL(direct.headers.get("location")!);
    expect(location.origin).not.toBe(new URL(server.url).origin);
    expect(location.href).not.toContain(TOKEN);
    expect(location.searchParams.get("response-content-type")).toBe("image/png");
    expect(location.searchParams.get("response-content-disposition")).toContain('filename="cat.png"');
    const got = await fetch(location);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
    const ranged = await fetch(location, { headers: { range: "bytes=100-199" } });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(100, 200))).toBe(true);

    // The asset's own url is flowgate's signed link: it redirects to a presigned GET expiring with it.
    const link = new URL(up.body.url);
    expect(link.origin).toBe(new URL(server.url).origin);
    const hop = await fetch(link, { redirect: "manual" });
    expect(hop.status).toBe(302);
    const presigned = new URL(hop.headers.get("location")!);
    const q = presigned.searchParams;
    const signedAt = Date.parse(q.get("X-Amz-Date")!.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, "$1-$2-$3T$4:$5:$6Z"));
    expect(signedAt + Number(q.get("X-Amz-Expires")) * 1000).toBeLessThanOrEqual(Date.parse(up.body.url_expires_at));
    expect(signedAt + Number(q.get("X-Amz-Expires")) * 1000).toBeGreaterThan(Date.parse(up.body.url_expires_at) - 2000);
    expect((await fetch(link)).status).toBe(200); // followed without any credential
  });

  it("/api/view of an output redirects to the bucket, and the key never appears in the Location", async () => {
    const server = await serve("view/");
    const job = await server.api.submit(imageGraph("s3view"));
    const done = await server.api.waitTerminal(job.id);
    expect(done.status).toBe("succeeded");
    const out = done.outputs[0];
    expect(await objectsUnder("view/")).toContain(out.hash.slice("blake3:".length));
    const view = await fetch(`${server.url}/api/view?filename=${encodeURIComponent(out.name)}&type=output`, {
      headers: { "x-api-key": TOKEN, authorization: `Bearer ${TOKEN}` },
      redirect: "manual",
    });
    expect(view.status).toBe(302);
    const location = view.headers.get("location")!;
    expect(location).not.toContain(TOKEN);
    expect(new URL(location).origin).not.toBe(new URL(server.url).origin);
    const image = await fetch(location);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe(out.content_type);
    expect((await image.arrayBuffer()).byteLength).toBe(out.size_bytes);
  });

  it("--blob-proxy: the signed link serves the bytes itself, ranges included", async () => {
    const server = await serve("proxied/", ["--blob-proxy"]);
    const bytes = randomBytes(50_000);
    const up = await upload(server.api, [{ name: "file", file: bytes, filename: "b.bin" }]);
    expect(up.status, up.text).toBe(201);
    const direct = await server.api.get(`/api/v2/assets/${up.body.id}/content`);
    expect(direct.status).toBe(302);
    expect(new URL(direct.headers.get("location")!).origin).toBe(new URL(server.url).origin);
    const got = await fetch(up.body.url, { redirect: "manual" });
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
    const ranged = await fetch(up.body.url, { headers: { range: "bytes=10-19" } });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(10, 20))).toBe(true);
  });
});

describe("lifecycle of objects", () => {
  it("retention deletes the objects no record refers to any more", async () => {
    const server = await serve("retention/");
    const job = await server.api.submit(imageGraph("s3retention"));
    const done = await server.api.waitTerminal(job.id);
    const key = done.outputs[0].hash.slice("blake3:".length);
    expect(await objectsUnder("retention/")).toContain(key);
    server.clock.advance(HOUR + 60_000);
    const r = await reapOnce({
      store: server.runtime.store,
      blobs: server.runtime.blobs,
      dispatcher: server.runtime.dispatcher,
      events: server.runtime.events,
      now: server.clock.now,
    });
    expect(r.blobs).toBeGreaterThanOrEqual(1);
    expect(await objectsUnder("retention/")).not.toContain(key);
  });

  it.skipIf(!plainHttp)("a bucket cut off: 500 upstream_error and /readyz 503; healed, it serves again by itself and loses nothing acknowledged", async () => {
    const proxy: BucketProxy = await startBucketProxy(bucket.endpoint!);
    try {
      const server = await serve("cut/", [], proxy.endpoint);
      const before = await upload(server.api, [{ name: "file", file: randomBytes(10_000), filename: "before.bin" }]);
      expect(before.status).toBe(201);
      expect((await server.api.get("/readyz")).status).toBe(200);

      proxy.cut();
      const during = await upload(server.api, [{ name: "file", file: randomBytes(10_000), filename: "during.bin" }]);
      expectError(during, 500, "upstream_error");
      const ready = await server.api.get("/readyz");
      expect(ready.status).toBe(503);
      expect(ready.body.checks.blobs).toBe(false);
      const content = await server.api.get(`/api/v2/assets/${before.body.id}/content`);
      expect(content.status).toBe(302); // presigning needs no request: the link is handed out, the bucket serves it once back

      proxy.heal();
      await waitFor(
        () => server.api.get("/readyz"),
        (r) => r.status === 200,
        "ready again",
      );
      const after = await upload(server.api, [{ name: "file", file: randomBytes(10_000), filename: "after.bin" }]);
      expect(after.status).toBe(201);
      // What was acknowledged before the cut is all there.
      const keys = await objectsUnder("cut/");
      expect(keys).toContain(before.body.hash.slice("blake3:".length));
      expect(keys).toContain(after.body.hash.slice("blake3:".length));
      expect(keys).toHaveLength(2);
    } finally {
      await s?.stop();
      s = undefined;
      await proxy.close();
    }
  });
});
