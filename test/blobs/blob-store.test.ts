import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { blake3 as referenceBlake3 } from "hash-wasm";
import { BlobNotFoundError, FileBlobStore, HashMismatchError, InvalidBlobKeyError, PayloadTooLargeError } from "../../src/blobs/index.ts";

let dataDir: string;
let blobs: FileBlobStore;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "flowgate-blobs-"));
  blobs = await FileBlobStore.open(dataDir);
});

afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

const bytes = (s: string) => Buffer.from(s, "utf8");
const tmpEntries = () => readdir(join(dataDir, "blobs", "tmp"));

/** Every file under the blob root, temp files included. */
/** Whether a path exists. */
async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function allFiles(): Promise<string[]> {
  const entries = await readdir(join(dataDir, "blobs"), { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

describe("FileBlobStore.put", () => {
  it("names the blob by the blake3 of its bytes, under a two-level fan-out", async () => {
    const data = bytes("hello, blobs");
    const result = await blobs.putBytes(data);
    const hex = await referenceBlake3(data);
    expect(result).toEqual({ key: hex, hash: `blake3:${hex}`, size: data.length, created: true });
    const path = join(dataDir, "blobs", hex.slice(0, 2), hex.slice(2, 4), hex);
    expect(blobs.pathOf(hex)).toBe(path);
    expect(await readFile(path)).toEqual(data);
    expect(await tmpEntries()).toEqual([]);
  });

  it("hashes a large stream of uneven chunks correctly", async () => {
    const data = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 11)) & 0xff;
    async function* chunks() {
      for (let at = 0, size = 1; at < data.length; at += size, size = Math.min(size * 3 + 1, 200_003)) {
        yield data.subarray(at, at + size);
      }
    }
    const result = await blobs.put(chunks());
    expect(result.key).toBe(await referenceBlake3(data));
    expect(result.size).toBe(data.length);
    expect((await readFile(blobs.pathOf(result.key))).equals(data)).toBe(true);
  });

  it("accepts Readables, string chunks and empty content", async () => {
    const fromReadable = await blobs.put(Readable.from([bytes("ab"), bytes("c")]));
    expect(fromReadable.key).toBe(await referenceBlake3("abc"));
    async function* strings() {
      yield "a";
      yield "bc";
    }
    expect((await blobs.put(strings())).key).toBe(fromReadable.key);
    const empty = await blobs.putBytes(Buffer.alloc(0));
    expect(empty).toMatchObject({ key: await referenceBlake3(""), size: 0, created: true });
  });

  it("stores identical bytes once", async () => {
    const first = await blobs.putBytes(bytes("same"));
    const second = await blobs.put(Readable.from([bytes("sa"), bytes("me")]));
    expect(first.created).toBe(true);
    expect(second).toEqual({ ...first, created: false });
    expect(await allFiles()).toEqual([blobs.pathOf(first.key)]);
  });

  it("reports exactly one creation for concurrent puts of the same bytes", async () => {
    const results = await Promise.all(Array.from({ length: 12 }, () => blobs.putBytes(bytes("raced"))));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.key)).size).toBe(1);
    expect(await allFiles()).toEqual([blobs.pathOf(results[0]!.key)]);
  });

  it("accepts a matching expected hash, in either case", async () => {
    const hex = await referenceBlake3("expected");
    expect((await blobs.putBytes(bytes("expected"), { expectedHash: `blake3:${hex}` })).key).toBe(hex);
    const again = await blobs.putBytes(bytes("expected"), { expectedHash: `blake3:${hex.toUpperCase()}` });
    expect(again.created).toBe(false);
  });

  it("stores nothing, not even a temp file, on an expected-hash mismatch", async () => {
    const wrong = `blake3:${await referenceBlake3("something else")}`;
    const error = await blobs.putBytes(bytes("actual"), { expectedHash: wrong }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HashMismatchError);
    expect((error as HashMismatchError).expected).toBe(wrong);
    expect((error as HashMismatchError).actual).toBe(`blake3:${await referenceBlake3("actual")}`);
    expect(await blobs.has(await referenceBlake3("actual"))).toBe(false);
    expect(await allFiles()).toEqual([]);
  });

  it("rejects a malformed expected hash before reading anything", async () => {
    let pulled = false;
    async function* source() {
      pulled = true;
      yield bytes("x");
    }
    for (const expectedHash of ["blake3:abc", `sha256:${"0".repeat(64)}`, "0".repeat(64)]) {
      await expect(blobs.put(source(), { expectedHash })).rejects.toBeInstanceOf(InvalidBlobKeyError);
    }
    expect(pulled).toBe(false);
    expect(await allFiles()).toEqual([]);
  });

  it("accepts exactly maxBytes and refuses one byte more, storing nothing", async () => {
    expect((await blobs.putBytes(Buffer.alloc(10, 1), { maxBytes: 10 })).size).toBe(10);
    await expect(blobs.putBytes(Buffer.alloc(11, 2), { maxBytes: 10 })).rejects.toBeInstanceOf(PayloadTooLargeError);
    expect(await allFiles()).toEqual([blobs.pathOf(await referenceBlake3(Buffer.alloc(10, 1)))]);
  });

  it("stops reading an endless stream once it passes maxBytes", async () => {
    let yielded = 0;
    async function* endless() {
      for (;;) {
        yielded++;
        yield Buffer.alloc(1024);
      }
    }
    const error = await blobs.put(endless(), { maxBytes: 4096 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect((error as PayloadTooLargeError).maxBytes).toBe(4096);
    expect(yielded).toBe(5);
    expect(await allFiles()).toEqual([]);
  });

  it("leaves no temp file when the source fails midway", async () => {
    async function* failing() {
      yield bytes("partial");
      throw new Error("client went away");
    }
    await expect(blobs.put(failing())).rejects.toThrow("client went away");
    expect(await allFiles()).toEqual([]);
  });
});

describe("FileBlobStore reads", () => {
  it("serves whole blobs and inclusive byte ranges", async () => {
    const { key } = await blobs.putBytes(bytes("0123456789"));
    expect(await text(await blobs.open(key))).toBe("0123456789");
    expect(await text(await blobs.open(key, { start: 2, end: 5 }))).toBe("2345");
    expect(await text(await blobs.open(key, { start: 7 }))).toBe("789");
    expect(await text(await blobs.open(key, { start: 9, end: 9 }))).toBe("9");
    expect(await text(await blobs.open(key, { end: 0 }))).toBe("0");
    await expect(blobs.open(key, { start: 5, end: 4 })).rejects.toBeInstanceOf(RangeError);
    await expect(blobs.open(key, { start: -1 })).rejects.toBeInstanceOf(RangeError);
    await expect(blobs.open(key, { start: 1.5 })).rejects.toBeInstanceOf(RangeError);
  });

  it("gives a small blob's bytes, or a range of them, as one buffer, and a large one as a stream", async () => {
    const { key } = await blobs.putBytes(bytes("0123456789"));
    expect(await blobs.contents(key, 10)).toEqual(bytes("0123456789"));
    expect(await blobs.contents(key, 10, { start: 2, end: 5 })).toEqual(bytes("2345"));
    expect(await blobs.contents(key, 10, { start: 7 })).toEqual(bytes("789"));
    expect(await blobs.contents(key, 10, { end: 0 })).toEqual(bytes("0"));
    await expect(blobs.contents(key, 10, { start: 5, end: 4 })).rejects.toBeInstanceOf(RangeError);
    await expect(blobs.contents("0".repeat(64), 10)).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(blobs.contents("not-a-key", 10)).rejects.toBeInstanceOf(InvalidBlobKeyError);
    const large = Buffer.alloc(256 * 1024 + 1, 7);
    const put = await blobs.putBytes(large);
    const whole = await blobs.contents(put.key, large.length);
    expect(whole).toBeInstanceOf(Readable);
    const chunks: Buffer[] = [];
    for await (const c of whole as Readable) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(large)).toBe(true);
    // A small range of a large blob is small.
    expect(await blobs.contents(put.key, large.length, { start: 10, end: 13 })).toEqual(Buffer.alloc(4, 7));
  });

  it("reports stat, has and absence", async () => {
    const { key } = await blobs.putBytes(bytes("stat me"));
    expect(await blobs.has(key)).toBe(true);
    expect((await blobs.stat(key))?.size).toBe(7);
    const missing = "0".repeat(64);
    expect(await blobs.has(missing)).toBe(false);
    expect(await blobs.stat(missing)).toBeNull();
    await expect(blobs.open(missing)).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it("lists stored keys and survives a reopen", async () => {
    const a = await blobs.putBytes(bytes("a"));
    const b = await blobs.putBytes(bytes("b"));
    const reopened = await FileBlobStore.open(dataDir);
    const keys: string[] = [];
    for await (const key of reopened.keys()) keys.push(key);
    expect(keys.sort()).toEqual([a.key, b.key].sort());
    expect(await text(await reopened.open(a.key))).toBe("a");
  });
});

describe("FileBlobStore.delete", () => {
  it("removes a blob once", async () => {
    const { key } = await blobs.putBytes(bytes("gone"));
    expect(await blobs.delete(key)).toBe(true);
    expect(await blobs.has(key)).toBe(false);
    expect(await blobs.delete(key)).toBe(false);
  });

  it("keeps a blob a put touched after the given time", async () => {
    const { key } = await blobs.putBytes(bytes("busy"));
    const longAgo = new Date(Date.now() - 3_600_000);
    await utimes(blobs.pathOf(key), longAgo, longAgo);
    const gcStartedAt = Date.now() - 60_000;
    expect(await blobs.putBytes(bytes("busy"))).toMatchObject({ created: false }); // dedup touches it
    expect(await blobs.delete(key, { unlessTouchedAfter: gcStartedAt })).toBe(false);
    expect(await blobs.has(key)).toBe(true);
    await utimes(blobs.pathOf(key), longAgo, longAgo);
    expect(await blobs.delete(key, { unlessTouchedAfter: gcStartedAt })).toBe(true);
  });
});

describe("blob key checks", () => {
  const badKeys = ["", "../../../etc/passwd", "0".repeat(63), "0".repeat(65), "A".repeat(64), "g".repeat(64), `${"0".repeat(62)}/x`, `..${"0".repeat(62)}`];

  it("rejects every operation on a malformed key without touching the filesystem", async () => {
    // A file a naive path join of "../../<name>" would reach from the fan-out.
    const sentinel = join(dataDir, "sentinel");
    await writeFile(sentinel, "keep");
    for (const key of [...badKeys, "../../sentinel"]) {
      expect(() => blobs.pathOf(key)).toThrow(InvalidBlobKeyError);
      await expect(blobs.has(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(blobs.stat(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(blobs.open(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
      await expect(blobs.delete(key)).rejects.toBeInstanceOf(InvalidBlobKeyError);
    }
    expect(await readFile(sentinel, "utf8")).toBe("keep");
  });
});

/** A sync hook that records every fsync and holds those `hold` picks until released. */
function heldSyncs(hold: (kind: "file" | "dir", path: string) => boolean) {
  const done: string[] = [];
  const held: Array<{ kind: string; path: string; release: () => void }> = [];
  const hook = async (kind: "file" | "dir", path: string, run: () => Promise<void>) => {
    if (hold(kind, path)) await new Promise<void>((release) => held.push({ kind, path, release }));
    await run();
    done.push(`${kind}:${path}`);
  };
  return { hook, done, held };
}

const settledSoon = async (p: Promise<unknown>) => {
  let settled = false;
  void p.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  return settled;
};

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(check()).toBe(true);
}

describe("FileBlobStore.put: what is durable when", () => {
  // A small buffer takes synchronous calls, a large one and a stream asynchronous ones: same order.
  const sources: Array<[string, () => { data: Buffer; source: Buffer | Readable }]> = [
    ["a small buffer", () => ({ data: Buffer.from("small and new"), source: Buffer.from("small and new") })],
    ["a large buffer", () => ({ data: Buffer.alloc(600 * 1024, 3), source: Buffer.alloc(600 * 1024, 3) })],
    ["a stream", () => ({ data: Buffer.from("streamed bytes"), source: Readable.from([Buffer.from("streamed "), Buffer.from("bytes")]) })],
  ];

  it.each(sources)("%s: the name appears only once the bytes are synced; the put resolves only once the name is", async (_, make) => {
    const { data, source } = make();
    const hex = await referenceBlake3(data);
    const path = join(dataDir, "blobs", hex.slice(0, 2), hex.slice(2, 4), hex);
    const syncs = heldSyncs((kind, p) => kind === "file" || p === dirname(path));
    const store = await FileBlobStore.open(dataDir, { syncHook: syncs.hook });
    const put = store.put(source);
    await until(() => syncs.held.length === 1);
    expect(syncs.held[0]!.kind).toBe("file");
    await expect(stat(path)).rejects.toMatchObject({ code: "ENOENT" });
    syncs.held[0]!.release();
    // Linked now, but not acknowledged before its directory entry is synced.
    await until(() => syncs.held.length === 2);
    expect(syncs.held[1]).toMatchObject({ kind: "dir", path: dirname(path) });
    expect(await readFile(path)).toEqual(data);
    expect(await settledSoon(put)).toBe(false);
    syncs.held[1]!.release();
    expect(await put).toMatchObject({ key: hex, created: true });
    // The directories mkdir made were synced too (their parents hold the new entries).
    expect(syncs.done).toEqual(expect.arrayContaining([`dir:${dirname(dirname(path))}`, `dir:${join(dataDir, "blobs")}`]));
    expect(await tmpEntries()).toEqual([]);
  });

  it("a second put of bytes still being published resolves only once the first one's name is synced", async () => {
    const data = bytes("published twice");
    const hex = await referenceBlake3(data);
    const leaf = join(dataDir, "blobs", hex.slice(0, 2), hex.slice(2, 4));
    const syncs = heldSyncs((kind, p) => kind === "dir" && p === leaf);
    const store = await FileBlobStore.open(dataDir, { syncHook: syncs.hook });
    const first = store.putBytes(data);
    await until(() => syncs.held.length === 1);
    const second = store.putBytes(data);
    expect(await settledSoon(second)).toBe(false);
    syncs.held[0]!.release();
    expect(await first).toMatchObject({ created: true });
    expect(await second).toMatchObject({ key: hex, created: false });
    expect(await allFiles()).toEqual([store.pathOf(hex)]);
  });

  it("a put whose bytes fail to sync stores nothing, and the next put of them stores them", async () => {
    let failing = true;
    const store = await FileBlobStore.open(dataDir, {
      syncHook: async (kind, _path, run) => {
        if (kind === "file" && failing) throw Object.assign(new Error("EIO"), { code: "EIO" });
        await run();
      },
    });
    const data = bytes("flaky disk");
    await expect(store.putBytes(data)).rejects.toThrow("EIO");
    expect(await allFiles()).toEqual([]);
    failing = false;
    expect(await store.putBytes(data)).toMatchObject({ created: true });
    expect(await readFile(store.pathOf(await referenceBlake3(data)))).toEqual(data);
  });
});

describe("FileBlobStore.stage: named once durable, served from memory until then", () => {
  it("serves staged bytes at once and names them only after they are synced; durable settles then", async () => {
    const data = bytes("staged output");
    const hex = await referenceBlake3(data);
    const syncs = heldSyncs((kind) => kind === "file");
    const store = await FileBlobStore.open(dataDir, { syncHook: syncs.hook });
    const staged = await store.stage(data);
    expect(staged).toMatchObject({ key: hex, hash: `blake3:${hex}`, size: data.length, created: true });
    expect(Buffer.from(staged.pending!)).toEqual(data);
    await until(() => syncs.held.length === 1);
    // Not named yet: a power loss now leaves no name over bytes that may be torn.
    await expect(stat(store.pathOf(hex))).rejects.toMatchObject({ code: "ENOENT" });
    expect(await settledSoon(staged.durable)).toBe(false);
    expect(await store.stat(hex)).toMatchObject({ size: data.length });
    expect(await store.has(hex)).toBe(true);
    expect(await store.contents(hex, data.length)).toEqual(data);
    expect(await store.contents(hex, data.length, { start: 7, end: 9 })).toEqual(bytes("out"));
    expect(await text(await store.open(hex, { start: 7 }))).toBe("output");
    expect(await store.delete(hex)).toBe(false); // its record is on its way
    syncs.held[0]!.release();
    await staged.durable;
    expect(await readFile(store.pathOf(hex))).toEqual(data);
    expect(await tmpEntries()).toEqual([]);
    expect(await store.contents(hex, data.length)).toEqual(data);
  });

  it("keeps nothing pending for stored bytes, and lets a second stage keep them too while the first is not durable", async () => {
    const syncs = heldSyncs((kind) => kind === "file");
    const store = await FileBlobStore.open(dataDir, { syncHook: syncs.hook });
    const data = bytes("twice staged");
    const first = await store.stage(data);
    const second = await store.stage(data);
    expect(second).toMatchObject({ key: first.key, created: false });
    expect(second.pending).not.toBeNull();
    // A put of the same bytes meanwhile is durable on its own: it names its copy once synced,
    // and the staged one, finding that name, is durable then too.
    const put = store.putBytes(data);
    expect(await settledSoon(put)).toBe(false);
    await until(() => syncs.held.length === 1);
    expect(await settledSoon(first.durable)).toBe(false);
    syncs.held[0]!.release();
    expect(await put).toMatchObject({ key: first.key, created: true });
    await Promise.all([first.durable, second.durable]);
    expect(syncs.held).toHaveLength(1);
    expect(await store.stage(data)).toMatchObject({ created: false, pending: null });
    expect(await allFiles()).toEqual([store.pathOf(first.key)]);
  });

  it("concurrent stages of the same bytes make one copy, each keeping the bytes until it is durable", async () => {
    const data = bytes("staged at once");
    const [a, b] = await Promise.all([blobs.stage(data), blobs.stage(data)]);
    expect([a.created, b.created].sort()).toEqual([false, true]);
    expect(a.pending).not.toBeNull();
    expect(b.pending).not.toBeNull();
    await Promise.all([a.durable, b.durable]);
    expect(await allFiles()).toEqual([blobs.pathOf(a.key)]);
  });

  it("names staged blobs with their batch: none before its time, all at once when flushed", async () => {
    const store = await FileBlobStore.open(dataDir, { stageBatchMs: 60_000 });
    const staged = [await store.stage(bytes("batch one")), await store.stage(bytes("batch two"))];
    expect(await settledSoon(Promise.race(staged.map((s) => s.durable)))).toBe(false);
    // Waiting: nothing on disk yet, not even a temp file; the bytes are served from memory.
    expect(await allFiles()).toEqual([]);
    expect(await store.contents(staged[1]!.key, 9)).toEqual(bytes("batch two"));
    await store.flushStaged();
    await Promise.all(staged.map((s) => s.durable));
    expect((await allFiles()).sort()).toEqual(staged.map((s) => store.pathOf(s.key)).sort());
    expect(await readFile(store.pathOf(staged[0]!.key))).toEqual(bytes("batch one"));
  });

  it("names a batch that reaches its size at once, without waiting for its time", async () => {
    const store = await FileBlobStore.open(dataDir, { stageBatchMs: 60_000 });
    const staged = await Promise.all(Array.from({ length: 64 }, (_, i) => store.stage(bytes(`blob ${i}`))));
    await Promise.all(staged.map((s) => s.durable));
    expect(await allFiles()).toHaveLength(64);
    expect(await tmpEntries()).toEqual([]);
  });

  it("a staged blob whose bytes a put stores meanwhile is not written again", async () => {
    const syncs = heldSyncs(() => false);
    const store = await FileBlobStore.open(dataDir, { stageBatchMs: 60_000, syncHook: syncs.hook });
    const data = bytes("put while staged");
    const staged = await store.stage(data);
    expect(await store.putBytes(data)).toMatchObject({ key: staged.key, created: true });
    const syncsOfPut = syncs.done.length;
    await store.flushStaged();
    await staged.durable;
    expect(syncs.done).toHaveLength(syncsOfPut);
    expect(await allFiles()).toEqual([store.pathOf(staged.key)]);
  });

  it("puts a large buffer durably, keeping nothing pending", async () => {
    const data = Buffer.alloc(300 * 1024, 7);
    const staged = await blobs.stage(data);
    expect(staged).toMatchObject({ created: true, pending: null });
    expect(await readFile(blobs.pathOf(staged.key))).toEqual(data);
  });

  it("a staged blob whose bytes fail to sync is not named, durable says so, and its bytes are still served", async () => {
    const store = await FileBlobStore.open(dataDir, {
      stageRetryMs: 60_000,
      syncHook: async (kind, _path, run) => {
        if (kind === "file") throw Object.assign(new Error("EIO"), { code: "EIO" });
        await run();
      },
    });
    const data = bytes("kept in memory on a bad disk");
    const staged = await store.stage(data);
    await expect(staged.durable).rejects.toThrow("EIO");
    expect(await allFiles()).toEqual([]);
    expect(await store.contents(staged.key, data.byteLength)).toEqual(Buffer.from(data));
    // Another stage of the same bytes does not wait for the retry: it stores them itself (and fails here too).
    await expect(store.stage(data)).rejects.toThrow("EIO");
  });

  it("a staged blob that failed to be named is tried again, backing off, until it is", async () => {
    let failures = 2;
    const store = await FileBlobStore.open(dataDir, {
      stageBatchMs: 0,
      stageRetryMs: 20,
      syncHook: async (kind, _path, run) => {
        if (kind === "file" && failures > 0) {
          failures--;
          throw Object.assign(new Error("EIO"), { code: "EIO" });
        }
        await run();
      },
    });
    const data = bytes("named on the third try");
    const staged = await store.stage(data);
    await expect(staged.durable).rejects.toThrow("EIO");
    // Named, and its temp file removed just after.
    const done = async () => (await exists(store.pathOf(staged.key))) && (await tmpEntries()).length === 0;
    for (let i = 0; i < 200 && !(await done()); i++) await new Promise((r) => setTimeout(r, 10));
    expect(failures).toBe(0);
    expect(await readFile(store.pathOf(staged.key))).toEqual(Buffer.from(data));
    expect(await tmpEntries()).toEqual([]);
  });

  it("flushStaged tries a blob waiting for its retry at once; past the memory cap a failed one is dropped", async () => {
    let failing = true;
    const store = await FileBlobStore.open(dataDir, {
      stageRetryMs: 60_000,
      stageRetainBytes: 40,
      syncHook: async (kind, _path, run) => {
        if (kind === "file" && failing) throw Object.assign(new Error("EIO"), { code: "EIO" });
        await run();
      },
    });
    const kept = bytes("thirty bytes of output, kept.");
    const dropped = bytes("these bytes do not fit under the cap");
    const [a, b] = await Promise.all([store.stage(kept), store.stage(dropped)]);
    await store.flushStaged();
    await expect(a.durable).rejects.toThrow("EIO");
    await expect(b.durable).rejects.toThrow("EIO");
    expect(await store.has(a.key)).toBe(true); // in memory, for its retry
    expect(await store.has(b.key)).toBe(false); // its commit keeps the bytes; the next start writes them back
    failing = false;
    await store.flushStaged();
    expect(await readFile(store.pathOf(a.key))).toEqual(Buffer.from(kept));
  });

  it("restore writes kept bytes back over a torn name, and refuses bytes of another key", async () => {
    const data = bytes("kept by the database");
    const hex = await referenceBlake3(data);
    await mkdir(dirname(blobs.pathOf(hex)), { recursive: true });
    await writeFile(blobs.pathOf(hex), ""); // what a power loss can leave of an unsynced file
    expect(await blobs.restore(hex, data)).toBe(true);
    expect(await readFile(blobs.pathOf(hex))).toEqual(data);
    const other = bytes("other bytes");
    expect(await blobs.restore(hex, other)).toBe(false);
    expect(await readFile(blobs.pathOf(hex))).toEqual(data);
    expect(await tmpEntries()).toEqual([]);
  });
});

describe("FileBlobStore.open cleanup", () => {
  it("removes temp files of dead writers and old ones, keeping live writers' files", async () => {
    const tmp = join(dataDir, "blobs", "tmp");
    const exited = spawnSync(process.execPath, ["-e", ""]);
    expect(exited.status).toBe(0);
    const deadPid = exited.pid!;
    await mkdir(tmp, { recursive: true });
    await writeFile(join(tmp, `${deadPid}.crashed.tmp`), "partial");
    await writeFile(join(tmp, "not-ours"), "junk");
    await writeFile(join(tmp, `${process.pid}.live.tmp`), "in progress");
    await writeFile(join(tmp, `${process.pid}.ancient.tmp`), "forgotten");
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3_600_000);
    await utimes(join(tmp, `${process.pid}.ancient.tmp`), twoDaysAgo, twoDaysAgo);

    await FileBlobStore.open(dataDir);
    expect(await readdir(tmp)).toEqual([`${process.pid}.live.tmp`]);
    expect((await stat(join(tmp, `${process.pid}.live.tmp`))).size).toBe(11);
  });

  it("on a shared directory, keeps another host's young temp files whatever its pid, and drops its old ones", async () => {
    const root = join(dataDir, "shared-blobs");
    const tmp = join(root, "tmp");
    const deadPid = spawnSync(process.execPath, ["-e", ""]).pid!;
    await mkdir(tmp, { recursive: true });
    await writeFile(join(tmp, `${deadPid}@other-node.a.tmp`), "in progress elsewhere");
    await writeFile(join(tmp, `${deadPid}@other-node.b.tmp`), "forgotten elsewhere");
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3_600_000);
    await utimes(join(tmp, `${deadPid}@other-node.b.tmp`), twoDaysAgo, twoDaysAgo);

    const blobs = await FileBlobStore.open(dataDir, { root });
    expect(await readdir(tmp)).toEqual([`${deadPid}@other-node.a.tmp`]);
    // Two stores on one directory storing the same bytes at once: one file, both see it whole.
    const other = await FileBlobStore.open(join(dataDir, "elsewhere"), { root });
    const bytes = Buffer.alloc(256 * 1024, 7);
    const [a, b] = await Promise.all([blobs.putBytes(bytes), other.putBytes(bytes)]);
    expect(a.key).toBe(b.key);
    expect([a.created, b.created].filter(Boolean)).toHaveLength(1);
    expect(await readFile(blobs.pathOf(a.key))).toEqual(bytes);
    expect(await readdir(tmp)).toEqual([`${deadPid}@other-node.a.tmp`]);
  });
});
