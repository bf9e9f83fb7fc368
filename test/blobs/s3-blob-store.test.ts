// The S3 blob backend against a real S3-protocol server (test-bucket.ts: s3rver on loopback, or
// the endpoint FLOWGATE_TEST_S3_BUCKET names), never a mock of the SDK. s3rver does not verify
// SigV4 signatures: the presigned links are checked here by their own parameters and by their
// expiry (which s3rver enforces), not by a tampered signature being refused. Nor does s3rver
// implement AbortMultipartUpload: the store aborts and tolerates its refusal (no object either way).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { S3Client } from "@aws-sdk/client-s3";
import { blake3 as referenceBlake3 } from "hash-wasm";
import { BlobNotFoundError, BlobUnavailableError, HashMismatchError, PayloadTooLargeError, parseS3Url } from "../../src/blobs/index.ts";
import { S3BlobStore, type S3BlobStoreOptions } from "../../src/blobs/s3-blob-store.ts";
import { startBucketProxy, type BucketProxy } from "./bucket-proxy.ts";
import { startTestBucket, type TestBucket } from "./test-bucket.ts";

const MiB = 1024 * 1024;
/** The proxy in front of the bucket speaks plain HTTP: s3rver, or another endpoint on http://. */
const plainHttp = !process.env.FLOWGATE_TEST_S3_BUCKET || (process.env.FLOWGATE_TEST_S3_ENDPOINT ?? "").startsWith("http:");
let bucket: TestBucket;

beforeAll(async () => {
  bucket = await startTestBucket();
});
afterAll(async () => {
  await bucket?.stop();
});

/** A store under a prefix of its own, through `endpoint` (default the bucket's). */
async function store(sub: string, options: Partial<S3BlobStoreOptions> & { endpoint?: string } = {}): Promise<S3BlobStore> {
  const endpoint = options.endpoint ?? bucket.endpoint;
  const client = new S3Client({
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...(bucket.s3rver
      ? { region: bucket.env.AWS_REGION, credentials: { accessKeyId: bucket.env.AWS_ACCESS_KEY_ID!, secretAccessKey: bucket.env.AWS_SECRET_ACCESS_KEY! } }
      : {}),
    maxAttempts: options.maxAttempts ?? 5,
    requestHandler: { connectionTimeout: 2000, requestTimeout: 10_000 },
  });
  return S3BlobStore.open({ location: parseS3Url(`${bucket.url}${sub}`), client, partBytes: 5 * MiB, ...options });
}

/** Deterministic bytes, different per seed. */
function pattern(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4) b.writeUInt32LE((Math.imul(i + seed, 2654435761) ^ seed) >>> 0, Math.min(i, size - 4));
  return b;
}

async function* inChunks(bytes: Buffer, size = 64 * 1024): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

const under = async (prefix: string) =>
  (await bucket.objects()).filter((k) => k.startsWith(`${bucket.prefix}${prefix}`)).map((k) => k.slice(bucket.prefix.length + prefix.length));

describe("S3BlobStore: content-addressed objects", () => {
  it("names a blob by the blake3 of its bytes under the prefix, stores identical bytes once, reads whole and ranged", async () => {
    const s = await store("small/");
    const data = Buffer.from("hello, bucket");
    const hex = await referenceBlake3(data);
    expect(await s.putBytes(data)).toEqual({ key: hex, hash: `blake3:${hex}`, size: data.length, created: true });
    expect(await s.put(Readable.from([Buffer.from("hello, "), Buffer.from("bucket")]))).toMatchObject({ key: hex, created: false });
    expect(await under("small/")).toEqual([hex]);
    expect(await text(await s.open(hex))).toBe("hello, bucket");
    expect(await text(await s.open(hex, { start: 7, end: 12 }))).toBe("bucket");
    expect(await text(await s.open(hex, { start: 7 }))).toBe("bucket");
    expect(await s.stat(hex)).toMatchObject({ size: data.length });
    expect(await s.has("0".repeat(64))).toBe(false);
    await expect(s.open("0".repeat(64))).rejects.toBeInstanceOf(BlobNotFoundError);
    const keys: string[] = [];
    for await (const k of s.keys()) keys.push(k);
    expect(keys).toEqual([hex]);
  });

  it("streams a large blob up as a multipart upload and names it only once hashed; the same bytes again leave no second object", async () => {
    const s = await store("large/");
    const data = pattern(12 * MiB + 321, 1);
    const hex = await referenceBlake3(data);
    expect(await s.put(inChunks(data))).toEqual({ key: hex, hash: `blake3:${hex}`, size: data.length, created: true });
    expect(await under("large/")).toEqual([hex]); // no temp object left
    expect(await s.put(inChunks(data, 1_000_003))).toMatchObject({ key: hex, created: false });
    expect(await under("large/")).toEqual([hex]);
    const chunks: Buffer[] = [];
    for await (const c of await s.open(hex)) chunks.push(c as Buffer);
    const back = Buffer.concat(chunks);
    expect(back.equals(data)).toBe(true);
  });

  it.skipIf(!plainHttp)(
    "with the expected hash given, a large upload goes up under its name, and bytes stored already are only hashed, never sent",
    async () => {
      const s = await store("expected/");
      const data = pattern(11 * MiB, 5);
      const hex = await referenceBlake3(data);
      const proxy = await startBucketProxy(bucket.endpoint!);
      try {
        const via = await store("expected/", { endpoint: proxy.endpoint });
        expect(await via.put(inChunks(data), { expectedHash: `blake3:${hex}` })).toMatchObject({ key: hex, created: true });
        expect(await under("expected/")).toEqual([hex]);
        const sent = proxy.forwarded;
        expect(await via.put(inChunks(data), { expectedHash: `blake3:${hex}` })).toMatchObject({ key: hex, created: false });
        expect(proxy.forwarded - sent).toBe(1); // one HEAD
        await expect(
          via.put(inChunks(Buffer.concat([data.subarray(0, -1), Buffer.from([data.at(-1)! ^ 1])])), { expectedHash: `blake3:${hex}` }),
        ).rejects.toBeInstanceOf(HashMismatchError);
      } finally {
        await proxy.close();
      }
      expect(await s.has(hex)).toBe(true);
    },
  );

  it("a large buffer (an output) goes up in parts too", async () => {
    const s = await store("buffer/");
    const data = pattern(6 * MiB, 2);
    const put = await s.putBytes(data);
    expect(put).toMatchObject({ key: await referenceBlake3(data), created: true, size: data.length });
    expect(await under("buffer/")).toEqual([put.key]);
  });

  it("refused and failed uploads leave no object: hash mismatch, too large, a source that breaks mid-upload", async () => {
    const s = await store("refused/");
    const data = pattern(11 * MiB, 3);
    const wrong = `blake3:${"ab".repeat(32)}`;
    await expect(s.put(inChunks(data), { expectedHash: wrong })).rejects.toBeInstanceOf(HashMismatchError);
    await expect(s.putBytes(Buffer.from("x"), { expectedHash: wrong })).rejects.toBeInstanceOf(HashMismatchError);
    await expect(s.put(inChunks(data), { maxBytes: 6 * MiB })).rejects.toBeInstanceOf(PayloadTooLargeError);
    async function* breaking() {
      yield* inChunks(data.subarray(0, 10 * MiB));
      throw new Error("client went away");
    }
    await expect(s.put(breaking())).rejects.toThrow("client went away");
    expect(await under("refused/")).toEqual([]);
  });

  it("deletes a blob unless it was put or reused after the given time", async () => {
    const s = await store("delete/");
    const { key } = await s.putBytes(Buffer.from("to delete"));
    expect(await s.delete(key, { unlessTouchedAfter: Date.now() })).toBe(false); // just written
    expect(await s.delete(key, { unlessTouchedAfter: Date.now() + 3_600_000 })).toBe(true);
    expect(await s.has(key)).toBe(false);
    expect(await s.delete(key)).toBe(false);
  });

  it("stage stores at once (no write-behind): nothing pending", async () => {
    const s = await store("stage/");
    const staged = await s.stage(Buffer.from("staged"));
    expect(staged).toMatchObject({ created: true, pending: null });
    expect(await s.has(staged.key)).toBe(true);
  });
});

describe("S3BlobStore: presigned downloads", () => {
  it("signs a GET that names the file and type, expires with the link, and needs no credential", async () => {
    const s = await store("presign/");
    const data = Buffer.from("0123456789");
    const { key } = await s.putBytes(data);
    const expiresAt = Date.now() + 90_000;
    const url = new URL(await s.downloadUrl(key, { expiresAt, fileName: "out/ünïcode name.png", contentType: "image/png" }));
    // s3rver does not check signatures: the link's own parameters are what is checked here.
    const q = url.searchParams;
    expect(q.get("X-Amz-Algorithm")).toBe("AWS4-HMAC-SHA256");
    expect(q.get("X-Amz-SignedHeaders")).toBe("host");
    expect(q.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
    const signedAt = Date.parse(q.get("X-Amz-Date")!.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, "$1-$2-$3T$4:$5:$6Z"));
    expect(signedAt + Number(q.get("X-Amz-Expires")) * 1000).toBeLessThanOrEqual(expiresAt);
    expect(signedAt + Number(q.get("X-Amz-Expires")) * 1000).toBeGreaterThan(expiresAt - 2000);
    expect(q.get("response-content-type")).toBe("image/png");
    expect(q.get("response-content-disposition")).toBe(`inline; filename="_n_code name.png"; filename*=UTF-8''%C3%BCn%C3%AFcode%20name.png`);
    expect(url.pathname.endsWith(`/${key}`)).toBe(true);
    // Fetched as anyone would: no credential of any kind.
    const whole = await fetch(url);
    expect(whole.status).toBe(200);
    expect(whole.headers.get("content-type")).toBe("image/png");
    expect(whole.headers.get("content-disposition")).toContain("inline");
    expect(await whole.text()).toBe("0123456789");
    const ranged = await fetch(url, { headers: { range: "bytes=2-5" } });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get("content-range")).toBe("bytes 2-5/10");
    expect(await ranged.text()).toBe("2345");
  });

  it("pins the declared type and sends a type that could run script as an attachment (a presigned GET cannot carry nosniff)", async () => {
    const s = await store("presign/");
    const { key } = await s.putBytes(Buffer.from("<html><script>alert(1)</script></html>"));
    const fetched = async (fileName: string, contentType: string) => {
      const r = await fetch(await s.downloadUrl(key, { expiresAt: Date.now() + 60_000, fileName, contentType }));
      expect(r.status).toBe(200);
      await r.body?.cancel();
      return { type: r.headers.get("content-type"), disposition: r.headers.get("content-disposition") };
    };
    for (const [name, type] of [
      ["page.html", "text/html"],
      ["drawing.svg", "image/svg+xml"],
      ["feed.xml", "application/atom+xml"],
    ] as const) {
      expect(await fetched(`out/${name}`, type)).toEqual({ type, disposition: `attachment; filename="${name}"; filename*=UTF-8''${name}` });
    }
    // The same bytes declared as an image are served as the image they claim to be, shown inline:
    // the bucket answers the link's type, whatever the object was stored with.
    expect(await fetched("x.png", "image/png")).toEqual({ type: "image/png", disposition: `inline; filename="x.png"; filename*=UTF-8''x.png` });
  });

  it("a link whose time is over is refused by the bucket", async () => {
    // Signed two hours ago, valid for one: expired now, with no wait.
    const past = await store("presign/", { now: () => Date.now() - 2 * 3_600_000 });
    const { key } = await past.putBytes(Buffer.from("expired link"));
    const url = await past.downloadUrl(key, { expiresAt: Date.now() - 3_600_000, fileName: "a.txt", contentType: "text/plain" });
    expect(new URL(url).searchParams.get("X-Amz-Expires")).toBe("3600");
    const r = await fetch(url);
    expect(r.status).toBe(403);
    await r.body?.cancel();
  });
});

describe("S3BlobStore: a bucket that throttles, or cannot be reached", () => {
  let proxy: BucketProxy;
  beforeAll(async () => {
    if (plainHttp) proxy = await startBucketProxy(bucket.endpoint!);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it.skipIf(!plainHttp)("retries 503 SlowDown with backoff until the bucket takes the request", async () => {
    const s = await store("throttled/", { endpoint: proxy.endpoint });
    proxy.throttle(3);
    const put = await s.putBytes(Buffer.from("throttled put"));
    expect(proxy.throttled).toBe(3);
    expect(put.created).toBe(true);
    expect(await text(await s.open(put.key))).toBe("throttled put");
  });

  it.skipIf(!plainHttp)("fails while the bucket is cut off and works again once it is back", async () => {
    const s = await store("cut/", { endpoint: proxy.endpoint, maxAttempts: 2 });
    await s.check();
    proxy.cut();
    await expect(s.check()).rejects.toBeTruthy();
    await expect(s.putBytes(Buffer.from("while cut"))).rejects.toBeTruthy();
    proxy.heal();
    await s.check();
    expect((await s.putBytes(Buffer.from("after heal"))).created).toBe(true);
  });
});

describe.skipIf(!plainHttp)("S3BlobStore: a put's requests share one bound", () => {
  // Each request answers within the request bound, but a put's HEAD and PUT together do not
  // answer within the put's: the put gives up at its bound, not at the sum of its requests'.
  it("a small put whose HEAD and PUT each take most of the bound fails BlobUnavailableError, as does a streamed one", async () => {
    const proxy = await startBucketProxy(bucket.endpoint!);
    try {
      const s = await store("put-bound/", { endpoint: proxy.endpoint, maxAttempts: 1, requestBoundMs: 3_000, putBoundMs: 3_000 });
      proxy.delay(2_000);
      const small = await s.put(Buffer.from("a slow bucket")).catch((err: unknown) => err);
      expect(small).toBeInstanceOf(BlobUnavailableError);
      expect((small as Error).message).toMatch(/did not take the upload within 3 s/);
      const streamed = await s.put(inChunks(pattern(1000, 7), 100)).catch((err: unknown) => err);
      expect(streamed).toBeInstanceOf(BlobUnavailableError);
      proxy.delay(0);
      expect((await s.put(Buffer.from("a bucket back to speed"))).created).toBe(true);
      await s.close();
    } finally {
      await proxy.close();
    }
  }, 30_000);
});

describe.skipIf(!plainHttp)("S3BlobStore: a frozen bucket", () => {
  // Connections are accepted and requests never answered: without its bounds every call would
  // wait for as long as the bucket stays frozen.
  it("a put, a read and the readiness check give up at their bounds with BlobUnavailableError, and work once it answers", async () => {
    const proxy = await startBucketProxy(bucket.endpoint!);
    try {
      const s = await store("frozen/", { endpoint: proxy.endpoint, requestBoundMs: 1_500, putBoundMs: 1_500, checkBoundMs: 500 });
      const before = await s.putBytes(Buffer.from("stored before the freeze"));
      proxy.hold(() => true);
      const put = await s.put(Buffer.from("during the freeze")).catch((err: unknown) => err);
      expect(put).toBeInstanceOf(BlobUnavailableError);
      expect((put as Error).message).toMatch(/within 1\.5 s/);
      const read = await s.open(before.key).catch((err: unknown) => err);
      expect(read).toBeInstanceOf(BlobUnavailableError);
      // Readiness says it in an operator's words, with the bound's failure as the cause.
      const check = await s.check().catch((err: unknown) => err);
      expect((check as Error).message).toMatch(/did not answer within 0\.5 s/);
      expect((check as Error).cause).toBeInstanceOf(BlobUnavailableError);
      proxy.drop();
      expect(await text(await s.open(before.key))).toBe("stored before the freeze");
      expect((await s.put(Buffer.from("after the freeze"))).created).toBe(true);
      await s.close();
    } finally {
      await proxy.close();
    }
  }, 30_000);
});
