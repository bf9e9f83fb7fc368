// Large static files served compressed and revalidated cheaply: each file is compressed once per
// encoding, on its first request (on the thread pool), and kept in memory for the process; the
// answer honours Accept-Encoding (br, then gzip) and carries an ETag per representation, so a
// browser's revalidation is a 304. The API reference's Scalar bundle is 4.3 MB as it stands and
// about 1.1 MB in brotli.
import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { promisify } from "node:util";
import { brotliCompress, constants, gzip } from "node:zlib";
import type { FastifyReply, FastifyRequest } from "fastify";

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/** Encodings offered, best first. */
type Encoding = "br" | "gzip" | "identity";

/** Types worth compressing, by extension. */
export const COMPRESSIBLE: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".map": "application/json; charset=utf-8",
};

interface Loaded {
  /** The file's identity on disk: a changed file is read again. */
  stamp: string;
  tag: string;
  bodies: Map<Encoding, Promise<Buffer>>;
}

/** Process-wide: every server in the process shares one compression of a file. */
const cache = new Map<string, Promise<Loaded>>();

async function load(path: string): Promise<Loaded> {
  const s = await stat(path);
  const stamp = `${s.size}:${s.mtimeMs}`;
  const cached = await cache.get(path)?.catch(() => undefined);
  if (cached?.stamp === stamp) return cached;
  const loading = readFile(path).then((bytes) => ({
    stamp,
    tag: createHash("sha256").update(bytes).digest("base64url").slice(0, 22),
    bodies: new Map<Encoding, Promise<Buffer>>([["identity", Promise.resolve(bytes)]]),
  }));
  cache.set(path, loading);
  return loading;
}

/** The encoding to answer with: br, else gzip, else none, as the request accepts (q=0 refuses). */
export function chooseEncoding(acceptEncoding: string | undefined): Encoding {
  const accepted = new Map<string, number>();
  for (const part of (acceptEncoding ?? "").split(",")) {
    const [name, ...params] = part.trim().toLowerCase().split(";");
    if (!name) continue;
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    accepted.set(name, q === undefined ? 1 : Number(q));
  }
  const ok = (e: string) => (accepted.get(e) ?? accepted.get("*") ?? 0) > 0;
  return ok("br") ? "br" : ok("gzip") ? "gzip" : "identity";
}

function compress(bytes: Buffer, encoding: Encoding): Promise<Buffer> {
  if (encoding === "br") return brotli(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } });
  if (encoding === "gzip") return gzipped(bytes, { level: 6 });
  return Promise.resolve(bytes);
}

/** Answers GET or HEAD of the file at `path` compressed as the request accepts, with an ETag and `cacheControl`. */
export async function sendCompressed(request: FastifyRequest, reply: FastifyReply, path: string, type: string, cacheControl: string): Promise<FastifyReply> {
  const file = await load(path);
  const encoding = chooseEncoding(request.headers["accept-encoding"]);
  let body = file.bodies.get(encoding);
  if (!body) {
    body = file.bodies.get("identity")!.then((bytes) => compress(bytes, encoding));
    body.catch(() => file.bodies.delete(encoding)); // a failed compression is tried again next time
    file.bodies.set(encoding, body);
  }
  const etag = `"${file.tag}${encoding === "identity" ? "" : `-${encoding}`}"`;
  reply.header("vary", "accept-encoding").header("etag", etag).header("cache-control", cacheControl).type(type);
  if (encoding !== "identity") reply.header("content-encoding", encoding);
  const match = request.headers["if-none-match"];
  if (match?.split(",").some((t) => t.trim().replace(/^W\//, "") === etag)) return reply.code(304).send();
  return reply.send(await body); // HEAD: Fastify sends the headers only
}
