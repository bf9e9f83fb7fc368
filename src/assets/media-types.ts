// Media types of stored files, from the caller's word, the bytes, or the file name.
import path from "node:path";
import { sniff } from "../engine/index.ts";

const BY_EXTENSION: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".webp": "image/webp",
  ".gif": "image/gif",
  ".bmp": "image/bmp",
  ".tif": "image/tiff",
  ".tiff": "image/tiff",
  ".webm": "video/webm",
  ".mp4": "video/mp4",
  ".flac": "audio/flac",
  ".wav": "audio/wav",
  ".mp3": "audio/mpeg",
  ".ogg": "audio/ogg",
  ".txt": "text/plain; charset=utf-8",
  ".json": "application/json",
  ".latent": "application/octet-stream",
  ".safetensors": "application/octet-stream",
};

/** Media type from the magic numbers of the first bytes (64 are enough), or null. */
export function sniffMediaType(head: Uint8Array): string | null {
  return sniff(head)?.mediaType ?? null;
}

/** Media type from a file name's extension, or null. */
export function mediaTypeFromName(name: string): string | null {
  return BY_EXTENSION[path.extname(name).toLowerCase()] ?? null;
}

const MEDIA_TYPE_RE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*(\s*;\s*[a-z0-9_-]+=[a-z0-9_.-]+)*$/i;

/** Whether a caller-given media type is well formed. */
export function isMediaType(value: string): boolean {
  return value.length <= 255 && MEDIA_TYPE_RE.test(value);
}
