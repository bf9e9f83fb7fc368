// The v2 asset operations over HTTP: streaming multipart upload, hash checks, deduplication,
// from-hash, HEAD by-hash, records with fresh signed links, ranged content, deletion.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blake3Hex } from "../../src/blobs/index.ts";
import { blobFiles, expectError, expectValid, HOUR, imageGraph, startTestServer, upload, v, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.stop();
});

const hashOf = async (bytes: Uint8Array) => `blake3:${await blake3Hex(bytes)}`;

async function content(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, bytes, json: () => JSON.parse(bytes.toString("utf8")) };
}

describe("upload", () => {
  it("AST-3 AST-4 stores the bytes hashed while streaming: 201 with the record, and the bytes come back", async () => {
    const bytes = randomBytes(300_000);
    const res = await upload(s.api, [
      { name: "content_type", value: "application/x-test" },
      { name: "file_path", value: "inputs/data.bin" },
      { name: "tags", value: "a" },
      { name: "tags", value: "b" },
      { name: "file", file: bytes, filename: "ignored.bin" },
    ]);
    expect(res.status, res.text).toBe(201);
    expectValid(v.response_uploadAsset_201, res.body);
    expect(res.body).toMatchObject({
      hash: await hashOf(bytes),
      size_bytes: bytes.length,
      content_type: "application/x-test",
      file_path: "inputs/data.bin",
      job_id: null,
      tags: ["a", "b"],
    });
    const got = await content(res.body.url);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(bytes)).toBe(true);
    expect(got.headers.get("content-type")).toBe("application/x-test");
    expect(got.headers.get("etag")).toBe(`"${res.body.hash}"`);
  });

  it("AST-4 identical bytes are one blob: the second upload is 200 with a new record over it", async () => {
    const bytes = randomBytes(4096);
    const before = (await blobFiles(s.dataDir)).length;
    const first = await upload(s.api, [{ name: "file", file: bytes }]);
    const second = await upload(s.api, [{ name: "file", file: bytes }]);
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expectValid(v.response_uploadAsset_200, second.body);
    expect(second.body.id).not.toBe(first.body.id);
    expect(second.body.hash).toBe(first.body.hash);
    expect((await blobFiles(s.dataDir)).length).toBe(before + 1);
  });

  it("AST-4 an expected_hash that matches is accepted", async () => {
    const bytes = randomBytes(1000);
    const res = await upload(s.api, [
      { name: "expected_hash", value: await hashOf(bytes) },
      { name: "file", file: bytes },
    ]);
    expect(res.status).toBe(201);
  });

  it("AST-4 a mismatching expected_hash is 409 hash_mismatch and nothing is stored", async () => {
    const bytes = randomBytes(50_000);
    const wrong = await hashOf(randomBytes(10));
    const before = await blobFiles(s.dataDir);
    const res = await upload(s.api, [
      { name: "expected_hash", value: wrong },
      { name: "file", file: bytes },
    ]);
    expectError(res, 409, "hash_mismatch", v.response_uploadAsset_409);
    expect(await blobFiles(s.dataDir)).toEqual(before);
    expect((await s.api.request("HEAD", `/api/v2/assets/by-hash/${await hashOf(bytes)}`)).status).toBe(404);
  });

  it("sniffs the media type when none is given", async () => {
    const job = await s.api.waitTerminal((await s.api.submit(imageGraph("sniff"))).id);
    const png = (await content(job.outputs[0].url)).bytes;
    const res = await upload(s.api, [{ name: "file", file: png, filename: "x" }]);
    expect(res.body.content_type).toBe("image/png");
  });

  it.each([
    [
      "a field after the file part",
      () => [
        { name: "file", file: randomBytes(10) },
        { name: "file_path", value: "late.bin" },
      ],
    ],
    ["no file part", () => [{ name: "file_path", value: "x.bin" }]],
    [
      "an unknown field",
      () => [
        { name: "colour", value: "red" },
        { name: "file", file: randomBytes(10) },
      ],
    ],
    ["a file under another name", () => [{ name: "upload", file: randomBytes(10) }]],
    [
      "a malformed expected_hash",
      () => [
        { name: "expected_hash", value: "md5:abc" },
        { name: "file", file: randomBytes(10) },
      ],
    ],
    [
      "a malformed content_type",
      () => [
        { name: "content_type", value: "not a type" },
        { name: "file", file: randomBytes(10) },
      ],
    ],
  ] as const)("rejects %s with 400 invalid_request, storing nothing", async (_name, parts) => {
    const before = await blobFiles(s.dataDir);
    const res = await upload(s.api, parts() as never);
    expectError(res, 400, "invalid_request", v.response_uploadAsset_400);
    expect(await blobFiles(s.dataDir)).toEqual(before);
  });

  it("a file_path holding a NUL character is 400 invalid_request, on upload and from-hash", async () => {
    const bad = await upload(s.api, [
      { name: "file_path", value: "a\u0000b.png" },
      { name: "file", file: Buffer.from("nul name") },
    ]);
    expectError(bad, 400, "invalid_request");
    const good = await upload(s.api, [{ name: "file", file: Buffer.from("nul name") }]);
    expectError(await s.api.post("/api/v2/assets/from-hash", { hash: good.body.hash, file_path: "x\u0000" }), 400, "invalid_request");
  });

  it("rejects a body that is not multipart", async () => {
    const res = await s.api.request("POST", "/api/v2/assets", { body: "hello", headers: { "content-type": "application/octet-stream" } });
    expectError(res, 400, "invalid_request", v.response_uploadAsset_400);
  });

  it("an upload over the size limit is 413 payload_too_large and nothing is stored", async () => {
    const small = await startTestServer({ config: { maxUploadBytes: 10_000 } });
    try {
      const res = await upload(small.api, [{ name: "file", file: randomBytes(50_000) }]);
      expectError(res, 413, "payload_too_large", v.response_uploadAsset_413);
      expect(await blobFiles(small.dataDir)).toEqual([]);
    } finally {
      await small.stop();
    }
  });
});

describe("reuse by hash", () => {
  it("AST-4 from-hash makes a new record over a blob the caller has (201), an identical one is 200", async () => {
    const bytes = randomBytes(2048);
    const up = await upload(s.api, [
      { name: "file_path", value: "orig.bin" },
      { name: "file", file: bytes },
    ]);
    const hash = up.body.hash;
    const head = await s.api.request("HEAD", `/api/v2/assets/by-hash/${hash}`);
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
    const made = await s.api.post("/api/v2/assets/from-hash", { hash, file_path: "copy.bin", tags: ["x"] });
    expect(made.status, made.text).toBe(201);
    expectValid(v.response_createAssetFromHash_201, made.body);
    expect(made.body).toMatchObject({ hash, size_bytes: 2048, file_path: "copy.bin", tags: ["x"] });
    expect(made.body.id).not.toBe(up.body.id);
    expect((await content(made.body.url)).bytes.equals(bytes)).toBe(true);
    const same = await s.api.post("/api/v2/assets/from-hash", { hash, file_path: "copy.bin", tags: ["x"] });
    expect(same.status).toBe(200);
    expectValid(v.response_createAssetFromHash_200, same.body);
    expect(same.body.id).toBe(made.body.id);
  });

  it("AST-4 an unknown hash is 404 blob_not_found; HEAD answers 404 without a body", async () => {
    const hash = await hashOf(randomBytes(64));
    expectError(await s.api.post("/api/v2/assets/from-hash", { hash }), 404, "blob_not_found", v.response_createAssetFromHash_404);
    const head = await s.api.request("HEAD", `/api/v2/assets/by-hash/${hash}`);
    expect(head.status).toBe(404);
    expect(head.text).toBe("");
  });

  it("a malformed hash is 400", async () => {
    expectError(await s.api.post("/api/v2/assets/from-hash", { hash: "blake3:xyz" }), 400, "invalid_request", v.response_createAssetFromHash_400);
    expect((await s.api.request("HEAD", "/api/v2/assets/by-hash/blake3:xyz")).status).toBe(400);
  });
});

describe("records and content", () => {
  it("AST-1 OUT-3 GET returns the record with a fresh signed link that needs no credentials", async () => {
    const bytes = randomBytes(100);
    const up = await upload(s.api, [{ name: "file", file: bytes }]);
    s.clock.advance(1000);
    const rec = await s.api.get(`/api/v2/assets/${up.body.id}`);
    expect(rec.status).toBe(200);
    expectValid(v.response_getAsset_200, rec.body);
    expect(rec.body.id).toBe(up.body.id);
    expect(Date.parse(rec.body.url_expires_at)).toBeGreaterThanOrEqual(Date.parse(up.body.url_expires_at));
    expect(new URL(rec.body.url).origin).toBe(s.url);
    expect((await content(rec.body.url)).bytes.equals(bytes)).toBe(true);
    // Direct content with the caller's credentials (none needed on an open server).
    expect((await content(`${s.url}/api/v2/assets/${up.body.id}/content`)).bytes.equals(bytes)).toBe(true);
  });

  it("serves ranges: 206 with Content-Range, 416 when outside, the whole for a malformed one", async () => {
    const bytes = randomBytes(1000);
    const up = await upload(s.api, [{ name: "file", file: bytes }]);
    const url = up.body.url;
    const mid = await content(url, { range: "bytes=10-19" });
    expect(mid.status).toBe(206);
    expect(mid.headers.get("content-range")).toBe("bytes 10-19/1000");
    expect(mid.bytes.equals(bytes.subarray(10, 20))).toBe(true);
    const open = await content(url, { range: "bytes=990-" });
    expect(open.status).toBe(206);
    expect(open.bytes.equals(bytes.subarray(990))).toBe(true);
    const suffix = await content(url, { range: "bytes=-5" });
    expect(suffix.status).toBe(206);
    expect(suffix.bytes.equals(bytes.subarray(995))).toBe(true);
    const beyond = await content(url, { range: "bytes=1000-1005" });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get("content-range")).toBe("bytes */1000");
    expectValid(v.response_getAssetContent_416, beyond.json());
    expect(beyond.json().error.code).toBe("range_not_satisfiable");
    // A range whose last byte comes before its first is invalid, so it is ignored (RFC 9110).
    const backwards = await content(url, { range: "bytes=5-2" });
    expect(backwards.status).toBe(200);
    expect(backwards.bytes.length).toBe(1000);
    const whole = await content(url, { range: "chunks=1-2" });
    expect(whole.status).toBe(200);
    expect(whole.bytes.length).toBe(1000);
  });

  it("AUTH a tampered or expired signature is 403 forbidden", async () => {
    const up = await upload(s.api, [{ name: "file", file: randomBytes(10) }]);
    const url = new URL(up.body.url);
    const sig = url.searchParams.get("signature")!;
    const tampered = new URL(url);
    tampered.searchParams.set("signature", (sig[0] === "A" ? "B" : "A") + sig.slice(1));
    const other = await upload(s.api, [{ name: "file", file: randomBytes(10) }]);
    const moved = new URL(url);
    moved.pathname = `/api/v2/assets/${other.body.id}/content`;
    const extended = new URL(url);
    extended.searchParams.set("expires", String(Number(url.searchParams.get("expires")) + 3600));
    for (const bad of [tampered, moved, extended]) {
      const res = await content(bad.href);
      expect(res.status, bad.href).toBe(403);
      expectValid(v.response_getAssetContent_403, res.json());
      expect(res.json().error.code).toBe("forbidden");
    }
    s.clock.advance(2 * HOUR);
    const expired = await content(up.body.url);
    expect(expired.status).toBe(403);
    expect(expired.json().error.code).toBe("forbidden");
    // A fresh read gives a working link again.
    const fresh = await s.api.get(`/api/v2/assets/${up.body.id}`);
    expect((await content(fresh.body.url)).status).toBe(200);
  });

  it("AUTH a signed link verifies against the raw path it was signed for, not a decoded one", async () => {
    const up = await upload(s.api, [{ name: "file", file: randomBytes(10) }]);
    const url = new URL(up.body.url);
    const id: string = up.body.id;
    const hex = (c: string) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
    const variants = [
      url.pathname.replace("/assets/", "/%61ssets/"),
      url.pathname.replace(`/${id}/`, `/${hex(id[0]!)}${id.slice(1)}/`),
      url.pathname.replace("/content", "/c%6Fntent"),
    ];
    for (const pathname of variants) {
      // Sent as raw text: URL parsing would leave the escapes alone, but say it plainly.
      const res = await content(`${url.origin}${pathname}${url.search}`);
      expect(res.status, pathname).toBe(403);
      expect(res.json().error.code).toBe("forbidden");
    }
    expect((await content(up.body.url)).status).toBe(200);
  });

  it("an unknown asset is 404 not_found everywhere", async () => {
    const id = "0192f4a8-7000-7a00-8000-0000000000aa";
    expectError(await s.api.get(`/api/v2/assets/${id}`), 404, "not_found", v.response_getAsset_404);
    expectError(await s.api.get(`/api/v2/assets/${id}/content`), 404, "not_found", v.response_getAssetContent_404);
    expectError(await s.api.request("DELETE", `/api/v2/assets/${id}`), 404, "not_found", v.response_deleteAsset_404);
  });
});

describe("deletion", () => {
  it("AST-4 DELETE is 204; the record is gone and the blob goes when nothing refers to it", async () => {
    const bytes = randomBytes(777);
    const a = await upload(s.api, [{ name: "file", file: bytes }]);
    const b = await upload(s.api, [{ name: "file", file: bytes }]);
    const before = (await blobFiles(s.dataDir)).length;
    const del = await s.api.request("DELETE", `/api/v2/assets/${a.body.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expect((await s.api.get(`/api/v2/assets/${a.body.id}`)).status).toBe(404);
    expect((await content(a.body.url)).status).toBe(404);
    // b still refers to the blob.
    expect((await blobFiles(s.dataDir)).length).toBe(before);
    expect((await content(b.body.url)).bytes.equals(bytes)).toBe(true);
    expect((await s.api.request("DELETE", `/api/v2/assets/${b.body.id}`)).status).toBe(204);
    expect((await blobFiles(s.dataDir)).length).toBe(before - 1);
    expect((await s.api.request("HEAD", `/api/v2/assets/by-hash/${a.body.hash}`)).status).toBe(404);
  });

  it("a job's output cannot be deleted on its own: 403 forbidden", async () => {
    const job = await s.api.waitTerminal((await s.api.submit(imageGraph("keep"))).id);
    const id = job.outputs[0].id;
    expectError(await s.api.request("DELETE", `/api/v2/assets/${id}`), 403, "forbidden", v.response_deleteAsset_403);
    expect((await s.api.get(`/api/v2/assets/${id}`)).status).toBe(200);
  });
});

describe("assets in workflows", () => {
  it("AST-2 a core/ASSET reference to an upload is read by the workflow", async () => {
    const job0 = await s.api.waitTerminal((await s.api.submit(imageGraph("src", 0x00ff00))).id);
    const png = (await content(job0.outputs[0].url)).bytes;
    const up = await upload(s.api, [
      { name: "file_path", value: "green.png" },
      { name: "file", file: png },
    ]);
    const workflow = {
      "1": { class_type: "LoadImage", inputs: { image: { __type: "core/ASSET", info: { id: up.body.id, hash: up.body.hash, file_path: "green.png" } } } },
      "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "inverted" } },
    };
    const done = await s.api.waitTerminal((await s.api.submit(workflow)).id);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expect(done.outputs).toHaveLength(1);
    expect(done.outputs[0].hash).not.toBe(up.body.hash);
  });
});
