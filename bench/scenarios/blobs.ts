// The blob stores' throughput for the same bytes, in one run: the S3 backend (S3BlobStore,
// hashing while it streams, multipart above 8 MiB) against the S3 server's own speed (one plain
// PutObject / GetObject of the same bytes through the SDK, nothing hashed), and against the
// filesystem backend (FileBlobStore). The server is s3rver on loopback, in this process; every
// round stores fresh bytes (no deduplication) and reads them back whole; rounds alternate order.
import { randomFillSync } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { FileBlobStore, S3BlobStore, parseS3Url, type BlobStore } from "../../src/blobs/index.ts";
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
  const client = new S3Client({ endpoint: `http://127.0.0.1:${port}`, forcePathStyle: true, region: "us-east-1", credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } });
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
    const rawPut = (key: string, bytes: Buffer) => client.send(new PutObjectCommand({ Bucket: "flowgate-bench", Key: `raw/${key}`, Body: bytes, ContentLength: bytes.length }));
    const rawGet = async (key: string) => drain((await client.send(new GetObjectCommand({ Bucket: "flowgate-bench", Key: `raw/${key}` }))).Body as Readable);

    // Warm every path once on a small blob.
    const warm = buf.subarray(0, MiB);
    await drain(await s3.open(await store(s3, warm)));
    await drain(await files.open(await store(files, warm)));
    await rawPut("warm", warm);
    await rawGet("warm");

    const put = { s3: [] as number[], raw: [] as number[], fs: [] as number[] };
    const get = { s3: [] as number[], raw: [] as number[], fs: [] as number[] };
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
    }
    ctx.log(`blobs put MiB/s: s3 store ${median(put.s3).toFixed(0)}, s3rver raw ${median(put.raw).toFixed(0)}, filesystem ${median(put.fs).toFixed(0)}`);
    ctx.log(`blobs get MiB/s: s3 store ${median(get.s3).toFixed(0)}, s3rver raw ${median(get.raw).toFixed(0)}, filesystem ${median(get.fs).toFixed(0)}`);
    const figure = (op: string, values: { s3: number[]; raw: number[]; fs: number[] }, against: "raw" | "fs", bound: number, note: string): Figure => ({
      scenario: `Blob store, ${op} ${blobMiB} MiB`,
      metric: "S3 backend speed",
      value: median(values.s3),
      unit: "MiB/s",
      baseline: { name: against === "raw" ? "s3rver's own (plain SDK call, same bytes)" : "filesystem backend", value: median(values[against]), unit: "MiB/s" },
      ratio: medianRatio(values.s3, values[against]),
      target: { on: "ratio", op: ">=", bound },
      rounds: values.s3,
      note,
    });
    return [
      figure("store", put, "raw", 0.5, "hashing while streaming, multipart, then a server-side copy to its name"),
      figure("fetch", get, "raw", 0.8, "a GET streamed through"),
      figure("store", put, "fs", 0.05, "loopback S3 against a local disk"),
      figure("fetch", get, "fs", 0.05, "loopback S3 against a local disk"),
    ].map(judge);
  } finally {
    client.destroy();
    server.httpServer.closeAllConnections();
    await server.close();
  }
}
