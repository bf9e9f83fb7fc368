// Media types of stored files, from the caller's word, the bytes, or the file name.
import path from "node:path";

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

/** Media type from magic numbers of the first bytes, or null. */
export function sniffMediaType(head: Uint8Array): string | null {
  const b = Buffer.from(head.buffer, head.byteOffset, Math.min(head.byteLength, 16));
  const ascii = (from: number, to: number) => b.subarray(from, to).toString("latin1");
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47) return "image/png";
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (b.length >= 12 && ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP") return "image/webp";
  if (b.length >= 12 && ascii(0, 4) === "RIFF" && ascii(8, 12) === "WAVE") return "audio/wav";
  if (b.length >= 4 && ascii(0, 4) === "fLaC") return "audio/flac";
  if (b.length >= 6 && (ascii(0, 6) === "GIF87a" || ascii(0, 6) === "GIF89a")) return "image/gif";
  if (b.length >= 4 && b.readUInt32BE(0) === 0x1a45dfa3) return "video/webm";
  return null;
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
