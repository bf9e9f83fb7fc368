// Media type detection from leading bytes (magic numbers), used to check what the
// engine reports and reusable by callers that receive files.

/** What the leading bytes say a file is. */
export interface Sniffed {
  format: string;
  mediaType: string;
}

/** The usual file extension of each media type flowgate stores. */
const EXTENSION_OF: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
  "image/gif": "gif",
  "audio/flac": "flac",
  "audio/wav": "wav",
  "audio/ogg": "ogg",
  "audio/mpeg": "mp3",
  "video/webm": "webm",
  "video/mp4": "mp4",
};

/** The file extension for a media type (parameters ignored), or null when none is usual. */
export function extensionFor(mediaType: string): string | null {
  return EXTENSION_OF[mediaType.split(";")[0]!.trim().toLowerCase()] ?? null;
}

/** Identifies a file from its bytes; null when nothing matches. */
export function sniff(bytes: Uint8Array): Sniffed | null {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ascii = (start: number, end: number) => b.toString("latin1", start, end);
  if (b.length >= 8 && b[0] === 0x89 && ascii(1, 4) === "PNG") {
    return { format: b.includes(Buffer.from("acTL", "latin1")) ? "apng" : "png", mediaType: "image/png" };
  }
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return { format: "jpeg", mediaType: "image/jpeg" };
  if (ascii(0, 4) === "GIF8") return { format: "gif", mediaType: "image/gif" };
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP") return { format: "webp", mediaType: "image/webp" };
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WAVE") return { format: "wav", mediaType: "audio/wav" };
  if (ascii(0, 4) === "fLaC") return { format: "flac", mediaType: "audio/flac" };
  if (ascii(0, 4) === "OggS") return { format: "ogg", mediaType: "audio/ogg" };
  if (b.length >= 4 && b[0] === 0x1a && b[1] === 0x45 && b[2] === 0xdf && b[3] === 0xa3) {
    const webm = b.subarray(0, 64).includes(Buffer.from("webm", "latin1"));
    return webm ? { format: "webm", mediaType: "video/webm" } : { format: "matroska", mediaType: "video/x-matroska" };
  }
  if (ascii(4, 8) === "ftyp") return { format: "mp4", mediaType: "video/mp4" };
  if (isSafetensors(b)) return { format: "safetensors", mediaType: "application/octet-stream" };
  if (isText(b)) return { format: "text", mediaType: "text/plain" };
  return null;
}

function isSafetensors(b: Buffer): boolean {
  if (b.length < 10) return false;
  const length = b.readBigUInt64LE(0);
  return length > 1n && length <= BigInt(b.length - 8) && b[8] === 0x7b; // '{'
}

function isText(b: Buffer): boolean {
  if (b.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(b);
    return true;
  } catch {
    return false;
  }
}
