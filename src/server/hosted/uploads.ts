// POST /api/upload/image and /api/upload/mask: flat, content-addressed inputs.
import type { MultipartFile } from "@fastify/multipart";
import type { FastifyRequest } from "fastify";
import sharp from "sharp";
import type { StoredUpload } from "../../assets/asset-service.ts";
import { ServiceError } from "../../domain/errors.ts";
import { malformedMultipart } from "../error-envelope.ts";
import type { HandlerContext } from "../handler-context.ts";
import { assertSafeName, contentName } from "./file-names.ts";

interface UploadForm<F> {
  file: F;
  filename: string | undefined;
  fields: Record<string, string>;
}

/**
 * Reads a hosted multipart form: one `image` file, given to `take` as it streams, and string
 * fields, which may come before or after it. When the form fails after `take`, `discard` undoes it.
 */
async function readForm<F>(ctx: HandlerContext, take: (file: MultipartFile) => Promise<F>, discard: (file: F) => Promise<void>): Promise<UploadForm<F>> {
  const request: FastifyRequest = ctx.request;
  if (!request.isMultipart()) throw new ServiceError("invalid_request", "Expected a multipart form.");
  const fields: Record<string, string> = {};
  let taken: { file: F; filename: string | undefined } | null = null;
  const parts = request.parts()[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await parts.next().catch((err: unknown) => Promise.reject(malformedMultipart(err)));
      if (next.done) break;
      const part = next.value;
      if (part.type !== "file") fields[part.fieldname] = String(part.value ?? "");
      else if (part.fieldname !== "image" || taken) part.file.resume();
      else taken = { file: await takeFile(part, take), filename: part.filename };
    }
  } catch (err) {
    if (taken) await discard(taken.file);
    // The body may not have been read to its end: this connection cannot carry another request.
    ctx.reply.header("connection", "close");
    throw err;
  }
  if (!taken) throw new ServiceError("invalid_request", "Missing field: image", { fields: [{ field: "image", reason: "missing" }] });
  return { ...taken, fields };
}

/** Hands a file part to `take`; a refusal drains the rest, and a broken stream is a malformed form. */
async function takeFile<F>(part: MultipartFile, take: (file: MultipartFile) => Promise<F>): Promise<F> {
  let broken = false;
  part.file.once("error", () => (broken = true));
  try {
    const taken = await take(part);
    if (part.file.truncated) throw new ServiceError("payload_too_large", "The request body is too large.");
    return taken;
  } catch (err) {
    part.file.resume();
    throw broken ? malformedMultipart(err) : err;
  }
}

/** Streams an upload's bytes into the blob store, hashed in the same pass. */
function storeStreamed(ctx: HandlerContext) {
  return (part: MultipartFile) => ctx.runtime.assets.storeUpload(part.file, part.filename);
}

/** Records stored bytes under their content name for the caller; the same bytes keep the same name. */
async function recordInput(ctx: HandlerContext, stored: StoredUpload, originalName: string | undefined, folder: "input" | "temp") {
  const name = contentName(stored.put.hash, stored.contentType, originalName);
  await ctx.runtime.assets.recordNamed(ctx.caller.owner, stored, name, folder);
  return { name, subfolder: "", type: folder };
}

function folderOf(type: string | undefined): "input" | "temp" {
  if (type === undefined || type === "" || type === "input" || type === "output") return "input";
  if (type === "temp") return "temp";
  throw new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field: "type", reason: "not_in_options" }] });
}

/** POST /api/upload/image: the file streams to the blob store, never held whole. */
export async function uploadImage(ctx: HandlerContext) {
  const assets = ctx.runtime.assets;
  const form = await readForm(ctx, storeStreamed(ctx), (stored) => assets.discardUpload(stored));
  try {
    return await recordInput(ctx, form.file, form.filename, folderOf(form.fields.type));
  } catch (err) {
    await assets.discardUpload(form.file);
    throw err;
  }
}

/** A file part's bytes, refused with 413 at the first byte past `maxBytes` (the multipart limit lets one more through). */
async function readBounded(part: MultipartFile, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of part.file as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new ServiceError("payload_too_large", "The request body is too large.");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/**
 * Bytes a pixel of the mask route costs while it composes: the original as RGBA, the mask's alpha,
 * the original's RGB and the composed RGBA, 8 bits a channel (sharp's own working memory aside).
 */
const MASK_BYTES_PER_PIXEL = 12;

/** The most pixels an image of the mask route may decode to: what `--job-memory` allows a job. */
function maskPixelLimit(ctx: HandlerContext): number {
  return Math.max(1, Math.floor(ctx.runtime.config.jobMemoryBytes / MASK_BYTES_PER_PIXEL));
}

function undecodable(): ServiceError {
  return new ServiceError("invalid_request", "The image or mask could not be decoded.", { fields: [{ field: "image", reason: "invalid_image" }] });
}

/**
 * The dimensions an image's header declares, read without decoding it; an image that would decode
 * to more than `limit` pixels (a small file can declare a huge image) is refused here.
 */
async function checkedSize(bytes: Buffer, field: string, limit: number): Promise<{ width: number; height: number }> {
  let width: number | undefined;
  let height: number | undefined;
  try {
    ({ width, height } = await sharp(bytes, { limitInputPixels: false }).metadata()); // the header only: the bound is checked below, in words
  } catch {
    throw undecodable();
  }
  if (!width || !height) throw undecodable();
  if (width * height > limit) {
    throw new ServiceError(
      "invalid_request",
      `The ${field === "image" ? "mask" : "original image"} is too large to decode here: ${width}x${height} pixels, at most ${limit}.`,
      {
        fields: [{ field, reason: "too_large" }],
      },
    );
  }
  return { width, height };
}

/** POST /api/upload/mask: the mask's alpha replaces the original's, as ComfyUI does (both decoded in memory, bounded first). */
export async function uploadMask(ctx: HandlerContext) {
  const form = await readForm(
    ctx,
    (part) => readBounded(part, ctx.runtime.config.maxUploadBytes),
    async () => undefined,
  );
  const folder = folderOf(form.fields.type);
  let ref: { filename?: unknown };
  try {
    ref = JSON.parse(form.fields.original_ref ?? "");
  } catch {
    throw new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field: "original_ref", reason: "malformed_json" }] });
  }
  if (typeof ref?.filename !== "string") {
    throw new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field: "original_ref.filename", reason: "missing" }] });
  }
  assertSafeName(ref.filename, "original_ref.filename", false);
  const original = await ctx.runtime.assets.readUploadByName(ctx.caller.owner, ref.filename);
  if (!original) throw new ServiceError("not_found", "The original image was not found.");
  // Both headers are read before anything is decoded: a decompression bomb costs no memory.
  const limitInputPixels = maskPixelLimit(ctx);
  const { width, height } = await checkedSize(original.bytes, "original_ref", limitInputPixels);
  await checkedSize(form.file, "image", limitInputPixels);
  let composed: Buffer;
  try {
    const alpha = await sharp(form.file, { limitInputPixels }).ensureAlpha().resize(width, height, { fit: "fill" }).extractChannel(3).raw().toBuffer();
    const rgb = await sharp(original.bytes, { limitInputPixels }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    composed = await sharp(rgb.data, { raw: { width: rgb.info.width, height: rgb.info.height, channels: 3 } })
      .joinChannel(alpha, { raw: { width: rgb.info.width, height: rgb.info.height, channels: 1 } })
      .png()
      .toBuffer();
  } catch {
    throw undecodable();
  }
  const stored = await ctx.runtime.assets.storeUpload(composed, "mask.png");
  try {
    return await recordInput(ctx, stored, `${ref.filename.replace(/\.[^.]*$/, "")}.png`, folder);
  } catch (err) {
    await ctx.runtime.assets.discardUpload(stored);
    throw err;
  }
}
