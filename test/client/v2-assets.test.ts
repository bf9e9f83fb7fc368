// uploadAsset (blake3 computed locally, HEAD by-hash and from-hash first, so known bytes are
// never sent twice) and download (follows `url`, verifies size and blake3, sends no credentials).
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blake3Hex } from "../../src/domain/blake3.ts";
import { assetReference, DownloadIntegrityError, FlowgateClient, HashMismatchError, type Job } from "../../src/index.ts";
import { FaultyFetch, imageGraph, startTestServer, type TestServer } from "./fixtures.ts";

const TOKEN = "asset-token";
let server: TestServer;
let dir: string;

beforeAll(async () => {
  server = await startTestServer(["--token", TOKEN]);
  dir = await mkdtemp(join(tmpdir(), "flowgate-assets-"));
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const uploads = (f: FaultyFetch) => f.matching("POST", /^\/api\/v2\/assets$/);

describe("uploadAsset", () => {
  it("sends new bytes once; the same bytes again are minted from their hash without being sent", async () => {
    const faults = new FaultyFetch();
    const client = new FlowgateClient({ baseUrl: server.url, token: TOKEN, fetch: faults.fetch });
    const bytes = randomBytes(4096);
    const hash = `blake3:${await blake3Hex(bytes)}`;

    const first = await client.uploadAsset(bytes);
    expect(first.reused).toBe(false);
    expect(first.asset.hash).toBe(hash);
    expect(uploads(faults)).toHaveLength(1);
    expect(faults.matching("HEAD", /by-hash/)[0]!.outcome).toBe(404);

    const second = await client.uploadAsset(bytes);
    expect(second.reused).toBe(true);
    expect(second.asset.hash).toBe(hash);
    expect(uploads(faults)).toHaveLength(1);
    expect(faults.matching("HEAD", /by-hash/)[1]!.outcome).toBe(200);
    expect(faults.matching("POST", /from-hash$/)).toHaveLength(1);
  });

  it("uploads a file by path under its name, hashed while streaming", async () => {
    const path = join(dir, "input.png");
    await writeFile(
      path,
      await sharp({ create: { width: 8, height: 8, channels: 3, background: { r: 9, g: 99, b: 199 } } })
        .png()
        .toBuffer(),
    );
    const client = new FlowgateClient({ baseUrl: server.url, token: TOKEN });
    const { asset } = await client.uploadAsset(path);
    expect(asset.file_path).toBe("input.png");
    expect(asset.hash).toBe(`blake3:${await blake3Hex(await readFile(path))}`);
    // The asset feeds a workflow as a core/ASSET reference.
    const job = await client.submit({
      "1": { class_type: "LoadImage", inputs: { image: assetReference(asset) } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "from-asset" } },
    });
    expect((await client.wait(job)).status).toBe("succeeded");
  });

  it("refuses bytes that do not match expectedHash before sending anything", async () => {
    const faults = new FaultyFetch();
    const client = new FlowgateClient({ baseUrl: server.url, token: TOKEN, fetch: faults.fetch });
    const err = await client.uploadAsset(randomBytes(64), { expectedHash: `blake3:${"0".repeat(64)}` }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HashMismatchError);
    expect(faults.seen).toHaveLength(0);
  });
});

describe("download", () => {
  let job: Job;
  beforeAll(async () => {
    const client = new FlowgateClient({ baseUrl: server.url, token: TOKEN });
    job = await client.wait(await client.submit(imageGraph("dl")));
  });

  it("follows the output url without credentials and verifies size and blake3", async () => {
    const faults = new FaultyFetch();
    const client = new FlowgateClient({ baseUrl: server.url, token: TOKEN, fetch: faults.fetch });
    const output = job.outputs[0]!;
    const target = join(dir, "out-ok");
    const result = await client.download(output, `${target}/`);
    expect(result.path).toBe(join(target, output.name));
    expect(result.hashVerified).toBe(true);
    const bytes = await readFile(result.path);
    expect(bytes.length).toBe(output.size_bytes);
    expect(`blake3:${await blake3Hex(bytes)}`).toBe(output.hash);
    const content = faults.matching("GET", /\/content$/);
    expect(content).toHaveLength(1);
    expect(content[0]!.headers.authorization).toBeUndefined();
  });

  it("rejects corrupted bytes and leaves no file behind", async () => {
    const faults = new FaultyFetch();
    faults.transform = async (request, response) => {
      if (!new URL(request.url).pathname.endsWith("/content")) return response;
      const bytes = new Uint8Array(await response.arrayBuffer());
      bytes[bytes.length - 1]! ^= 0xff;
      return new Response(bytes, { status: 200, headers: response.headers });
    };
    const client = new FlowgateClient({ baseUrl: server.url, token: TOKEN, fetch: faults.fetch });
    const target = join(dir, "out-corrupt");
    const err = await client.download(job.outputs[0]!, `${target}/`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DownloadIntegrityError);
    expect((err as DownloadIntegrityError).expected.hash).toBe(job.outputs[0]!.hash);
    expect(await readdir(target).catch(() => [])).toEqual([]);
  });

  it("rejects a truncated body", async () => {
    const faults = new FaultyFetch();
    faults.transform = async (request, response) => {
      if (!new URL(request.url).pathname.endsWith("/content")) return response;
      const bytes = new Uint8Array(await response.arrayBuffer());
      return new Response(bytes.subarray(0, bytes.length - 10), { status: 200 });
    };
    const client = new FlowgateClient({ baseUrl: server.url, token: TOKEN, fetch: faults.fetch });
    const path = join(dir, "truncated.png");
    await expect(client.download(job.outputs[0]!, path)).rejects.toBeInstanceOf(DownloadIntegrityError);
    expect(existsSync(path)).toBe(false);
  });
});
