// v2 asset handlers: streaming uploads, reuse by hash, records, ranged content, deletion.
import { contentDisposition, isActiveContentType } from "../../domain/content-types.ts";
import type { MultipartFile } from "@fastify/multipart";
import type { OperationInput, OperationResult } from "../../../generated/handlers.ts";
import type { AssetRecord } from "../../store/index.ts";
import { BlobNotFoundError } from "../../blobs/errors.ts";
import type { ByteRange } from "../../blobs/blob-store.ts";
import { ServiceError } from "../../domain/errors.ts";
import { invalidRequest, malformedMultipart } from "../error-envelope.ts";
import type { HandlerContext } from "../handler-context.ts";
import { assetView, signedContentUrl } from "../views.ts";
import { parseRange } from "./range.ts";

/**
 * POST /api/v2/assets (multipart). The file is hashed while it streams in, so the fields that
 * describe it (content_type, file_path, expected_hash, tags) must come before the `file` part.
 */
export async function uploadAsset(_input: OperationInput<"uploadAsset">, ctx: HandlerContext): Promise<OperationResult<"uploadAsset">> {
  const { request } = ctx;
  if (!request.isMultipart()) throw invalidRequest([{ field: "", reason: "expected_multipart" }]);
  const fields: Record<string, string> = {};
  const tags: string[] = [];
  let result: Awaited<ReturnType<typeof ctx.runtime.assets.upload>> | null = null;
  const parts = request.parts()[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await parts.next().catch((err: unknown) => Promise.reject(malformedMultipart(err)));
      if (next.done) break;
      const part = next.value;
      if (part.type === "file" && (result || part.fieldname !== "file")) part.file.resume(); // drain what we do not take
      if (result) throw invalidRequest([{ field: part.fieldname, reason: "after_file" }]);
      if (part.type === "file") {
        if (part.fieldname !== "file") throw invalidRequest([{ field: part.fieldname, reason: "unknown_field" }]);
        result = await storeFile(ctx, part, fields, tags);
      } else if (part.fieldname === "tags") tags.push(String(part.value ?? ""));
      else if (["content_type", "file_path", "expected_hash"].includes(part.fieldname)) fields[part.fieldname] = String(part.value ?? "");
      else throw invalidRequest([{ field: part.fieldname, reason: "unknown_field" }]);
    }
  } catch (err) {
    // The upload as a whole failed: the record made for its file goes too.
    if (result) await ctx.runtime.assets.delete(ctx.caller.owner, result.asset.id);
    // The body may not have been read to its end: this connection cannot carry another request.
    ctx.reply.header("connection", "close");
    throw err;
  }
  if (!result) throw invalidRequest([{ field: "file", reason: "missing" }]);
  const links = ctx.links();
  const body = assetView(result.asset, links, { createdNew: result.created });
  return result.created ? { status: 201, body, headers: { location: assetLocation(body.id, links.mount) } } : { status: 200, body };
}

async function storeFile(ctx: HandlerContext, part: MultipartFile, fields: Record<string, string>, tags: string[]) {
  let broken = false;
  part.file.once("error", () => (broken = true));
  const stored = await ctx.runtime.assets
    .upload(ctx.caller.owner, part.file, {
      content_type: fields.content_type,
      file_path: fields.file_path ?? (part.filename || undefined),
      expected_hash: fields.expected_hash,
      tags,
    })
    .catch((err: unknown) => {
      // Refused before or while storing (a full disk): drain the rest, so the answer goes out.
      part.file.resume();
      return Promise.reject(broken ? malformedMultipart(err) : err);
    });
  if (part.file.truncated) {
    await ctx.runtime.assets.delete(ctx.caller.owner, stored.asset.id);
    throw new ServiceError("payload_too_large", "The request body is too large.");
  }
  return stored;
}

/** POST /api/v2/assets/from-hash */
export async function createAssetFromHash(input: OperationInput<"createAssetFromHash">, ctx: HandlerContext): Promise<OperationResult<"createAssetFromHash">> {
  const { asset, created } = await ctx.runtime.assets.fromHash(ctx.caller.owner, input.body.hash, {
    file_path: input.body.file_path,
    tags: input.body.tags,
  });
  // The bytes were already held: from-hash never makes a new blob.
  const links = ctx.links();
  const body = assetView(asset, links, { createdNew: false });
  return created ? { status: 201, body, headers: { location: assetLocation(body.id, links.mount) } } : { status: 200, body };
}

/** The `Location` of a created asset record: its host-relative address under the mount prefix. */
function assetLocation(id: string, mount: string): string {
  return `${mount}/api/v2/assets/${id}`;
}

/** HEAD /api/v2/assets/by-hash/{hash}: no body either way. */
export async function checkAssetHash(input: OperationInput<"checkAssetHash">, ctx: HandlerContext): Promise<OperationResult<"checkAssetHash">> {
  const ok = await ctx.runtime.assets.canUseHash(ctx.caller.owner, input.params.hash);
  return { status: ok ? 200 : 404 };
}

/** GET /api/v2/assets/{id} */
export async function getAsset(input: OperationInput<"getAsset">, ctx: HandlerContext): Promise<OperationResult<"getAsset">> {
  return { status: 200, body: assetView(await ctx.runtime.assets.get(ctx.caller.owner, input.params.id), ctx.links()) };
}

/** DELETE /api/v2/assets/{id} */
export async function deleteAsset(input: OperationInput<"deleteAsset">, ctx: HandlerContext): Promise<OperationResult<"deleteAsset">> {
  await ctx.runtime.assets.delete(ctx.caller.owner, input.params.id);
  return { status: 204 };
}

/**
 * The raw request path without its mount prefix (as many segments as the mount has): what
 * signedContentUrl signed. A mount whose decoded form has another count of segments leaves a
 * path that verifies against nothing, which refuses the link.
 */
function unmounted(rawPath: string, mount: string): string {
  const mountSegments = mount === "" ? 0 : mount.split("/").length - 1;
  return `/${rawPath
    .split("/")
    .slice(1 + mountSegments)
    .join("/")}`;
}

/**
 * GET /api/v2/assets/{id}/content. With the caller's credentials: a 302 to the asset's signed
 * link, as the production service answers, so the link can be handed to anyone. With a
 * signature (that link): the bytes, ranged. With blobs in a bucket (and no `--blob-proxy`) both
 * answer 302 to a presigned GET on the bucket instead, which serves the bytes and ranges.
 */
export async function getAssetContent(input: OperationInput<"getAssetContent">, ctx: HandlerContext): Promise<OperationResult<"getAssetContent">> {
  const { runtime, reply } = ctx;
  const id = input.params.id;
  if (input.query?.signature === undefined) {
    const asset = await runtime.assets.get(ctx.caller.owner, id);
    const links = ctx.links();
    const direct = await runtime.assets.directUrl(asset, links.expiresAt());
    return { status: 302, headers: { location: direct ?? signedContentUrl(asset.id, links).url, "cache-control": "private, no-store" } };
  }
  // Verify against the raw path and query, as the signer signs them: a decoded path would let
  // `/api/v2/%61ssets/...` pass for `/api/v2/assets/...`, and the validated query has `expires`
  // coerced to a number.
  const [rawPath = "", rawQuery = ""] = ctx.request.url.split("?");
  const check = runtime.signer.verify(unmounted(rawPath, ctx.links().mount), rawQuery, runtime.now());
  if (check !== "ok") throw new ServiceError("forbidden", check === "expired" ? "This link has expired." : "This link is not valid.");
  const asset = await runtime.assets.getUnchecked(id);
  // Blobs in a bucket: the bucket serves the bytes (and ranges), through a presigned GET that
  // expires with this link.
  const direct = await runtime.assets.directUrl(asset, Number(input.query.expires) * 1000);
  if (direct !== null) return { status: 302, headers: { location: direct, "cache-control": "private, no-store" } };
  const range = parseRange(input.headers.range, asset.size_bytes);
  if (range === "unsatisfiable") {
    throw new ServiceError("range_not_satisfiable", "The requested range is not satisfiable.", { size: asset.size_bytes });
  }
  reply.header("content-type", asset.content_type);
  // As ComfyUI's /view: no sniffing, and a type that could run script in this origin is a download.
  reply.header("x-content-type-options", "nosniff");
  if (isActiveContentType(asset.content_type)) reply.header("content-disposition", contentDisposition(asset.file_path ?? asset.name, asset.content_type));
  reply.header("accept-ranges", "bytes");
  if (asset.hash) reply.header("etag", `"${asset.hash}"`);
  reply.header("cache-control", "private, max-age=3600");
  if (range) {
    reply.code(206).header("content-range", `bytes ${range.start}-${range.end}/${asset.size_bytes}`);
    reply.header("content-length", String(range.end - range.start + 1));
    return { status: 206, body: await bytesOf(asset, ctx, range) };
  }
  reply.header("content-length", String(asset.size_bytes));
  return { status: 200, body: asset.size_bytes === 0 ? "" : await bytesOf(asset, ctx) };
}

/**
 * The asset's bytes from this node's blob store. A record whose blob is not there is 404, and the
 * log says why: most often the processes do not share one blob store (an API node and the worker
 * that wrote the output each on a blob directory of its own), else a bucket restored older than
 * the database.
 */
async function bytesOf(asset: AssetRecord, ctx: HandlerContext, range?: ByteRange) {
  try {
    return await ctx.runtime.assets.contents(asset, range);
  } catch (err) {
    if (!(err instanceof BlobNotFoundError)) throw err;
    ctx.request.log.warn(
      `asset ${asset.id}: its blob ${asset.blob_key} is not in this node's blob store; every API node and worker must share one --blob-dir or --blob-store`,
    );
    throw new ServiceError("not_found", "The bytes of this asset are not in this server's blob store.");
  }
}
