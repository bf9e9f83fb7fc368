// The blob stores' throughput for the same bytes, in one run: the S3 backend (S3BlobStore,
// hashing while it streams, multipart above 8 MiB) against the S3 server's own speed (the SDK's
// own multipart upload of the same bytes and parts, a plain PutObject, a plain GetObject, nothing
// hashed), and against the filesystem backend (FileBlobStore). The server is s3rver on loopback, in this process; every
// round stores fresh bytes (no deduplication) and reads them back whole; rounds alternate order.
import { randomFillSync } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import S3rver from "s3rver";
import { FileBlobStore, blake3Hex, parseS3Url, type BlobStore } from "../../src/blobs/index.ts";
import { S3BlobStore } from "../../src/blobs/s3-blob-store.ts";
import type { BenchContext } from "../lib/context.ts";
import { judge, type Figure } from "../lib/report.ts";
import { median, medianRatio, nowMs } from "../lib/stats.ts";

const MiB = 1024 * 1024;
const CHUNK = 64 * 1024;

async function* chunks(buf: Buffer): AsyncGenerator<Buffer> {
  for (let at = 0; at < buf.length; at += CHUNK) yield buf.subarray(at, at + CHUNK);
}

async function drain(stream: Readable | AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const c of stream) n += (c as Uint8Array).byteLength;
  return n;
}

/** MiB/s of one timed call over `bytes`. */
async function speed(bytes: number, run: () => Promise<unknown>): Promise<number> {
  const t = nowMs();
  await run();
  return bytes / MiB / ((nowMs() - t) / 1000);
}

export async function blobScenarios(ctx: BenchContext): Promise<Figure[]> {
  const { blobMiB, blobRounds } = ctx.sizes;
  const directory = await mkdtemp(join(ctx.tmpRoot, "s3rver-"));
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: "flowgate-bench" }] });
  const { port } = await server.run();
  const client = new S3Client({
    endpoint: `http://127.0.0.1:${port}`,
    forcePathStyle: true,
    region: "us-east-1",
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  });
  try {
    const s3 = await S3BlobStore.open({ location: parseS3Url("s3://flowgate-bench/store/"), client });
    const files = await FileBlobStore.open(await mkdtemp(join(ctx.tmpRoot, "blobs-")));
    const buf = Buffer.allocUnsafe(blobMiB * MiB);
    randomFillSync(buf);
    const size = buf.length;
    const fresh = (r: number, which: number) => {
      buf.writeUInt32LE(r * 16 + which, 0); // new bytes each round and store: nothing deduplicated
      return buf;
    };
    const store = async (b: BlobStore, bytes: Buffer) => (await b.put(chunks(bytes))).key;
    const rawPut = (key: string, bytes: Buffer) =>
      client.send(new PutObjectCommand({ Bucket: "flowgate-bench", Key: `raw/${key}`, Body: bytes, ContentLength: bytes.length }));
    // The SDK's own multipart upload (lib-storage), 8 MiB parts as the store's: the protocol's cost without flowgate's.
    const rawMultipart = (key: string, bytes: Buffer) =>
      new Upload({ client, params: { Bucket: "flowgate-bench", Key: `raw/${key}`, Body: bytes }, partSize: 8 * MiB, queueSize: 2 }).done();
    const rawGet = async (key: string) => drain((await client.send(new GetObjectCommand({ Bucket: "flowgate-bench", Key: `raw/${key}` }))).Body as Readable);

    // Warm every path once on a small blob.
    const warm = buf.subarray(0, MiB);
    await drain(await s3.open(await store(s3, warm)));
    await drain(await files.open(await store(files, warm)));
    await rawPut("warm", warm);
    await rawGet("warm");

    const put = { s3: [] as number[], raw: [] as number[], fs: [] as number[] };
    const get = { s3: [] as number[], raw: [] as number[], fs: [] as number[] };
    /** Puts with the hash given (an upload with expected_hash): multipart under its name, no copy. */
    const known: number[] = [];
    const multipartRaw: number[] = [];
    for (let r = 0; r < blobRounds; r++) {
      const order = r % 2 === 0 ? (["s3", "raw", "fs"] as const) : (["fs", "raw", "s3"] as const);
      for (const which of order) {
        const bytes = fresh(r, order.indexOf(which));
        if (which === "raw") {
          const key = `r${r}`;
          put.raw.push(await speed(size, () => rawPut(key, bytes)));
          get.raw.push(await speed(size, () => rawGet(key)));
        } else {
          const b = which === "s3" ? s3 : files;
          let key = "";
          put[which].push(await speed(size, async () => (key = await store(b, bytes))));
          get[which].push(await speed(size, async () => drain(await b.open(key))));
        }
      }
      const bytes = fresh(r, 3);
      const expectedHash = `blake3:${await blake3Hex(bytes)}`;
      multipartRaw.push(await speed(size, () => rawMultipart(`m${r}`, bytes)));
      known.push(await speed(size, () => s3.put(chunks(bytes), { expectedHash })));
    }
    ctx.log(`blobs put MiB/s: s3 store ${median(put.s3).toFixed(0)}, s3rver raw ${median(put.raw).toFixed(0)}, filesystem ${median(put.fs).toFixed(0)}`);
    ctx.log(`blobs get MiB/s: s3 store ${median(get.s3).toFixed(0)}, s3rver raw ${median(get.raw).toFixed(0)}, filesystem ${median(get.fs).toFixed(0)}`);
    ctx.log(`blobs put with expected_hash MiB/s: s3 store ${median(known).toFixed(0)}, s3rver multipart ${median(multipartRaw).toFixed(0)}`);
    const figure = (op: string, s3Rounds: number[], baseline: { name: string; rounds: number[] }, bound: number | null, note: string): Figure => ({
      scenario: `Blob store, ${op} ${blobMiB} MiB`,
      metric: "S3 backend speed",
      value: median(s3Rounds),
      unit: "MiB/s",
      baseline: { name: baseline.name, value: median(baseline.rounds), unit: "MiB/s" },
      ratio: medianRatio(s3Rounds, baseline.rounds),
      ...(bound === null ? {} : { target: { on: "ratio" as const, op: ">=" as const, bound } }),
      rounds: s3Rounds,
      note,
    });
    const multipart = { name: "s3rver's own multipart upload (lib-storage, same bytes and parts)", rounds: multipartRaw };
    const onePut = { name: "s3rver's own single PutObject (same bytes)", rounds: put.raw };
    return [
      // Without the hash the name is known only at the end: one server-side copy more than the SDK's own multipart upload.
      figure("store", put.s3, multipart, 0.5, "hash unknown (an upload without expected_hash): multipart under tmp/, completed, copied to its name"),
      figure("store (expected_hash given)", known, multipart, 0.8, "multipart under its name, completed once the hash matched"),
      figure("fetch", get.s3, { name: "s3rver's own GetObject (same bytes)", rounds: get.raw }, 0.8, "a GET streamed through"),
      // For information: one PUT of a buffer held whole (which the store never does for large blobs), and the filesystem backend.
      figure("store", put.s3, onePut, null, "for information: a single PUT holds the whole blob in memory"),
      figure("store", put.s3, { name: "filesystem backend", rounds: put.fs }, null, "for information: loopback s3rver against a local disk"),
      figure("fetch", get.s3, { name: "filesystem backend", rounds: get.fs }, null, "for information: loopback s3rver against a local disk"),
    ].map(judge);
  } finally {
    client.destroy();
    server.httpServer.closeAllConnections();
    await server.close();
  }
}
