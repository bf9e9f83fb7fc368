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
 * Reads a hosted multipart form: one `image` file, given to `take` as it streams with the fields
 * read so far, and string fields, which may come before or after it. When the form fails after
 * `take`, `discard` undoes it.
 */
async function readForm<F>(
  ctx: HandlerContext,
  take: (file: MultipartFile, fieldsBefore: Readonly<Record<string, string>>) => Promise<F>,
  discard: (file: F) => Promise<void>,
): Promise<UploadForm<F>> {
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
      else taken = { file: await takeFile(part, (file) => take(file, fields)), filename: part.filename };
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

/** The original a mask applies to: its bytes and dimensions, checked. */
interface Original {
  name: string;
  bytes: Buffer;
  width: number;
  height: number;
}

/** The form's `original_ref`, found among the caller's uploads and its header checked against `limit`. */
async function checkOriginal(ctx: HandlerContext, fields: Readonly<Record<string, string>>, limit: number): Promise<Original> {
  let ref: { filename?: unknown };
  try {
    ref = JSON.parse(fields.original_ref ?? "");
  } catch {
    throw new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field: "original_ref", reason: "malformed_json" }] });
  }
  if (typeof ref?.filename !== "string") {
    throw new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field: "original_ref.filename", reason: "missing" }] });
  }
  assertSafeName(ref.filename, "original_ref.filename", false);
  const original = await ctx.runtime.assets.readUploadByName(ctx.caller.owner, ref.filename);
  if (!original) throw new ServiceError("not_found", "The original image was not found.");
  return { name: ref.filename, bytes: original.bytes, ...(await checkedSize(original.bytes, "original_ref", limit)) };
}

/** Bytes of a mask read before its header is looked at, doubling up to MASK_PROBE_MAX_BYTES. */
const MASK_PROBE_FIRST_BYTES = 4096;
const MASK_PROBE_MAX_BYTES = 16 * 1024 * 1024;
/**
 * Most bytes per pixel a mask's file may hold (16-bit RGBA stored uncompressed is 8, a float
 * TIFF 16), plus room for metadata: a larger file is refused without reading the rest.
 */
const MASK_FILE_BYTES_PER_PIXEL = 16;
const MASK_FILE_SLACK_BYTES = 1024 * 1024;

/**
 * The mask's bytes, read as they stream and refused as soon as they can be: 413 at the first
 * byte past `maxBytes` (the multipart limit lets one more through) or past what an image of the
 * declared dimensions can hold, and 400 once its header declares more than `limit` pixels or
 * is no image at all; the rest of the body is not waited for.
 */
async function readMask(part: MultipartFile, maxBytes: number, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  let bound = maxBytes;
  let nextProbe: number | null = MASK_PROBE_FIRST_BYTES;
  for await (const chunk of part.file as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > bound) throw new ServiceError("payload_too_large", "The request body is too large.");
    chunks.push(chunk);
    if (nextProbe === null || size < nextProbe) continue;
    const header = await probeHeader(Buffer.concat(chunks, size), limit);
    if (header === null) nextProbe = nextProbe * 2 > MASK_PROBE_MAX_BYTES ? null : nextProbe * 2;
    else {
      nextProbe = null;
      bound = Math.min(maxBytes, header.width * header.height * MASK_FILE_BYTES_PER_PIXEL + MASK_FILE_SLACK_BYTES);
      if (size > bound) throw new ServiceError("payload_too_large", "The request body is too large.");
    }
  }
  return Buffer.concat(chunks, size);
}

/**
 * The dimensions a mask's first bytes declare (refused past `limit`), or null while its header
 * is not whole yet. Bytes whose format sharp does not know are refused: more cannot change that.
 */
async function probeHeader(bytes: Buffer, limit: number): Promise<{ width: number; height: number } | null> {
  try {
    const { width, height } = await sharp(bytes, { limitInputPixels: false }).metadata();
    if (!width || !height) return null;
  } catch (err) {
    if (/unsupported image format/i.test((err as Error).message)) throw undecodable();
    return null;
  }
  return checkedSize(bytes, "image", limit);
}

/**
 * POST /api/upload/mask: the mask's alpha replaces the original's, as ComfyUI does (both decoded
 * in memory, bounded first). Fields sent before the image are checked before it is read.
 */
export async function uploadMask(ctx: HandlerContext) {
  const limitInputPixels = maskPixelLimit(ctx);
  let original: Original | null = null;
  const form = await readForm(
    ctx,
    async (part, before) => {
      if (before.type !== undefined) folderOf(before.type);
      if (before.original_ref !== undefined) original = await checkOriginal(ctx, before, limitInputPixels);
      return readMask(part, ctx.runtime.config.maxUploadBytes, limitInputPixels);
    },
    async () => undefined,
  );
  const folder = folderOf(form.fields.type);
  // Both headers are read before anything is decoded: a decompression bomb costs no memory.
  const { name, bytes, width, height } = original ?? (await checkOriginal(ctx, form.fields, limitInputPixels));
  await checkedSize(form.file, "image", limitInputPixels);
  let composed: Buffer;
  try {
    const alpha = await sharp(form.file, { limitInputPixels }).ensureAlpha().resize(width, height, { fit: "fill" }).extractChannel(3).raw().toBuffer();
    const rgb = await sharp(bytes, { limitInputPixels }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    composed = await sharp(rgb.data, { raw: { width: rgb.info.width, height: rgb.info.height, channels: 3 } })
      .joinChannel(alpha, { raw: { width: rgb.info.width, height: rgb.info.height, channels: 1 } })
      .png()
      .toBuffer();
  } catch {
    throw undecodable();
  }
  const stored = await ctx.runtime.assets.storeUpload(composed, "mask.png");
  try {
    return await recordInput(ctx, stored, `${name.replace(/\.[^.]*$/, "")}.png`, folder);
  } catch (err) {
    await ctx.runtime.assets.discardUpload(stored);
    throw err;
  }
}
