// InlineBlobs: bytes kept in the store's inline_blobs table in front of the blob files. Real files,
// a real SQLite store as the table.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BlobNotFoundError, blake3Hex, FileBlobStore, InlineBlobs, type BlobStore, type DownloadLink } from "../../src/blobs/index.ts";
import { openStore, type Store } from "../../src/store/index.ts";
import { newAsset, newJob, T0 } from "../store/helpers.ts";

/** The filesystem store, giving links as a bucket does (to see InlineBlobs withhold them). */
function linking(files: FileBlobStore): BlobStore {
  return new Proxy(files, {
    get(target, name) {
      if (name === "downloadUrl") return async (key: string) => `https://bucket.example/${key}`;
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

let dir: string;
let store: Store;
let files: FileBlobStore;
let blobs: InlineBlobs;
const LINK: DownloadLink = { expiresAt: T0, fileName: "a.png", contentType: "image/png" };

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "flowgate-inline-"));
  store = await openStore({ dataDir: dir });
  files = await FileBlobStore.open(dir);
  blobs = new InlineBlobs(linking(files), store);
});

afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** Records `text` as an output whose bytes its record keeps; its key. */
async function keptInline(text: string, created_at = T0 + 5): Promise<{ key: string; assetId: string }> {
  const bytes = new Uint8Array(Buffer.from(text));
  const key = await blake3Hex(bytes);
  const job = await store.createJob(newJob());
  const asset = await store.addAsset(newAsset({ job_id: job.id, blob_key: key, size_bytes: bytes.byteLength, inline: bytes, created_at }));
  return { key, assetId: asset.id };
}

const all = async <T>(items: AsyncIterable<T>): Promise<T[]> => {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
};

const read = async (stream: AsyncIterable<Buffer>) => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
};

describe("InlineBlobs", () => {
  it("serves inline bytes, whole and by range, as the files serve theirs", async () => {
    const { key } = await keptInline("hello inline");
    const filed = await blobs.put(new Uint8Array(Buffer.from("hello file")));
    expect(await blobs.has(key)).toBe(true);
    expect(await blobs.stat(key)).toEqual({ size: 12, mtimeMs: T0 + 5 });
    expect(await read(await blobs.open(key))).toBe("hello inline");
    expect(await read(await blobs.open(key, { start: 6, end: 11 }))).toBe("inline");
    expect((await blobs.contents(key, 12)).toString()).toBe("hello inline");
    expect((await blobs.contents(key, 12, { start: 0, end: 4 })).toString()).toBe("hello");
    expect((await blobs.contents(filed.key, 10)).toString()).toBe("hello file");
    expect(await read(await blobs.open(filed.key, { start: 6 }))).toBe("file");
    const missing = "0".repeat(64);
    expect(await blobs.has(missing)).toBe(false);
    await expect(blobs.open(missing)).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(blobs.contents(missing, 3)).rejects.toBeInstanceOf(BlobNotFoundError);
    expect(new Set(await all(blobs.keys()))).toEqual(new Set([key, filed.key]));
  });

  it("gives no direct link to inline bytes: this server serves them", async () => {
    const { key } = await keptInline("linked?");
    const filed = await blobs.put(new Uint8Array(Buffer.from("a file")));
    expect(await blobs.downloadUrl(key, LINK)).toBeNull();
    expect(await blobs.downloadUrl(filed.key, LINK)).toBe(`https://bucket.example/${filed.key}`);
  });

  it("removes inline bytes only once unreferenced and untouched since, from both homes", async () => {
    const { key, assetId } = await keptInline("same bytes");
    await files.put(new Uint8Array(Buffer.from("same bytes"))); // an upload of the same bytes, as a file
    expect(await blobs.delete(key, { unlessTouchedAfter: Date.now() })).toBe(true); // the file went; the row is named
    expect(await files.has(key)).toBe(false);
    expect(await blobs.has(key)).toBe(true);
    await store.deleteAsset(assetId);
    expect(await blobs.delete(key, { unlessTouchedAfter: T0 })).toBe(false); // touched at T0 + 5
    expect(await blobs.delete(key)).toBe(true);
    expect(await blobs.has(key)).toBe(false);
    expect(await all(blobs.keys())).toEqual([]);
  });
});
