// download(): fetches an output's signed `url` without credentials (it carries its own
// authorization and may point at a storage host), follows redirects by hand so no header is
// carried along, and verifies the size and blake3 hash before the file takes its final name.
import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createBlake3Hasher, parseBlake3Hash } from "../domain/blake3.ts";
import { DownloadIntegrityError, errorFromResponse } from "./errors.ts";

/** The fields of an output (or asset) a download needs. */
export interface Downloadable {
  url: string;
  size_bytes: number;
  hash: string | null;
  /** File name used when `dest` is a folder (outputs have `name`, assets `file_path`). */
  name?: string;
  file_path?: string | null;
  id: string;
}

/** Where a download went and what it verified. */
export interface DownloadResult {
  path: string;
  size: number;
  /** `blake3:<hex>` of the bytes written. */
  hash: string;
  /** False when no expected hash was available (the server computes hashes lazily). */
  hashVerified: boolean;
}

const MAX_REDIRECTS = 5;

/** A file name safe to join to a folder: the last path segment, no control characters. */
export function safeFileName(name: string | null | undefined, fallback: string): string {
  const base = basename(String(name ?? "").replaceAll("\\", "/")).replace(/[\u0000-\u001f]/g, "");
  return base === "" || base === "." || base === ".." ? fallback : base;
}

/** GETs `url` without credentials, following redirects by hand (each hop also without them). */
export async function fetchWithoutCredentials(fetchImpl: (request: Request) => Promise<Response>, url: string, signal?: AbortSignal): Promise<Response> {
  let current = url;
  for (let hop = 0; ; hop++) {
    const res = await fetchImpl(new Request(current, { redirect: "manual", signal }));
    const location = res.headers.get("location");
    if (res.status < 300 || res.status >= 400 || !location) return res;
    await res.body?.cancel();
    if (hop >= MAX_REDIRECTS) throw new Error(`too many redirects fetching ${url}`);
    current = new URL(location, current).toString();
  }
}

/** Resolves `dest` to a file path: a folder (existing, or ending in a separator) gets the output's name. */
export async function targetPath(item: Downloadable, dest: string): Promise<string> {
  const isFolder =
    /[\\/]$/.test(dest) ||
    (await stat(dest).then(
      (s) => s.isDirectory(),
      () => false,
    ));
  return isFolder ? join(dest, safeFileName(item.name ?? item.file_path, item.id)) : dest;
}

/** Streams a response body to `path`, verifying size and hash; nothing is left behind on failure. */
export async function saveVerified(res: Response, path: string, item: Downloadable, fallbackHash: () => Promise<string | null>): Promise<DownloadResult> {
  if (!res.ok || !res.body) throw await errorFromResponse(res);
  await mkdir(dirname(path), { recursive: true });
  const partial = `${path}.${randomUUID().slice(0, 8)}.part`;
  const hasher = await createBlake3Hasher();
  let size = 0;
  try {
    const source = Readable.fromWeb(res.body as import("node:stream/web").ReadableStream<Uint8Array>);
    await pipeline(
      source,
      async function* (chunks: AsyncIterable<Uint8Array>) {
        for await (const chunk of chunks) {
          hasher.update(chunk);
          size += chunk.byteLength;
          yield chunk;
        }
      },
      createWriteStream(partial),
    );
    const actual = `blake3:${hasher.digestHex()}`;
    const expectedHex = parseBlake3Hash(item.hash) ?? parseBlake3Hash(etagHash(res)) ?? parseBlake3Hash(await fallbackHash());
    const expected = { size: item.size_bytes, hash: expectedHex ? `blake3:${expectedHex}` : null };
    if (size !== item.size_bytes) {
      throw new DownloadIntegrityError(`downloaded ${size} bytes, expected ${item.size_bytes}`, expected, { size, hash: actual });
    }
    if (expected.hash !== null && expected.hash !== actual) {
      throw new DownloadIntegrityError(`downloaded bytes hash to ${actual}, expected ${expected.hash}`, expected, { size, hash: actual });
    }
    await rename(partial, path);
    return { path, size, hash: actual, hashVerified: expected.hash !== null };
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  }
}

/** The blake3 hash an `ETag` carries (`"blake3:<hex>"`), or null. */
function etagHash(res: Response): string | null {
  const tag = res.headers.get("etag");
  return tag ? tag.replace(/^W\//, "").replaceAll('"', "") : null;
}
