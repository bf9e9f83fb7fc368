// POST /api/upload/image and /api/upload/mask: flat, content-addressed inputs.
import type { FastifyRequest } from "fastify";
import sharp from "sharp";
import { blake3Hex } from "../../blobs/index.ts";
import { mediaTypeFromName, sniffMediaType } from "../../assets/media-types.ts";
import { ServiceError } from "../../domain/errors.ts";
import { malformedMultipart } from "../error-envelope.ts";
import type { Caller } from "../../domain/caller.ts";
import type { Runtime } from "../../runtime/runtime.ts";
import { assertSafeName, contentName } from "./file-names.ts";

interface UploadForm {
  file: Buffer | null;
  filename: string | undefined;
  fields: Record<string, string>;
}

/** Reads a hosted multipart form: one `image` file and string fields. */
async function readForm(request: FastifyRequest): Promise<UploadForm> {
  if (!request.isMultipart()) throw new ServiceError("invalid_request", "Expected a multipart form.");
  const form: UploadForm = { file: null, filename: undefined, fields: {} };
  try {
    await readParts(request, form);
  } catch (err) {
    throw malformedMultipart(err);
  }
  if (!form.file) throw new ServiceError("invalid_request", "Missing field: image", { fields: [{ field: "image", reason: "missing" }] });
  return form;
}

async function readParts(request: FastifyRequest, form: UploadForm): Promise<void> {
  for await (const part of request.parts()) {
    if (part.type === "file") {
      if (part.fieldname !== "image" || form.file) {
        part.file.resume();
        continue;
      }
      form.file = await part.toBuffer();
      form.filename = part.filename;
    } else {
      form.fields[part.fieldname] = String(part.value ?? "");
    }
  }
}

/** Stores bytes under their content name for the caller; the same bytes keep the same name. */
async function storeInput(runtime: Runtime, caller: Caller, bytes: Buffer, originalName: string | undefined, folder: "input" | "temp") {
  const contentType = sniffMediaType(bytes) ?? mediaTypeFromName(originalName ?? "") ?? "application/octet-stream";
  const name = contentName(await blake3Hex(bytes), contentType, originalName);
  const existing = await runtime.assets.findByName(caller.owner, name, folder);
  if (!existing) await runtime.assets.upload(caller.owner, bytes, { folder, file_path: name, content_type: contentType });
  return { name, subfolder: "", type: folder };
}

function folderOf(type: string | undefined): "input" | "temp" {
  if (type === undefined || type === "" || type === "input" || type === "output") return "input";
  if (type === "temp") return "temp";
  throw new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field: "type", reason: "not_in_options" }] });
}

/** POST /api/upload/image */
export async function uploadImage(request: FastifyRequest, runtime: Runtime, caller: Caller) {
  const form = await readForm(request);
  return storeInput(runtime, caller, form.file!, form.filename, folderOf(form.fields.type));
}

/** POST /api/upload/mask: the mask's alpha replaces the original's, as ComfyUI does. */
export async function uploadMask(request: FastifyRequest, runtime: Runtime, caller: Caller) {
  const form = await readForm(request);
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
  const original = await runtime.assets.readUploadByName(caller.owner, ref.filename);
  if (!original) throw new ServiceError("not_found", "The original image was not found.");
  let composed: Buffer;
  try {
    const base = sharp(original.bytes).ensureAlpha();
    const { width, height } = await base.metadata();
    const alpha = await sharp(form.file!).ensureAlpha().resize(width, height, { fit: "fill" }).extractChannel(3).raw().toBuffer();
    const rgb = await sharp(original.bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    composed = await sharp(rgb.data, { raw: { width: rgb.info.width, height: rgb.info.height, channels: 3 } })
      .joinChannel(alpha, { raw: { width: rgb.info.width, height: rgb.info.height, channels: 1 } })
      .png()
      .toBuffer();
  } catch {
    throw new ServiceError("invalid_request", "The image or mask could not be decoded.", { fields: [{ field: "image", reason: "invalid_image" }] });
  }
  return storeInput(runtime, caller, composed, ref.filename.replace(/\.[^.]*$/, "") + ".png", folderOf(form.fields.type));
}
