// Local bytes for uploads: a file path or bytes in memory, hashed with blake3 without
// buffering a whole file.
import { createReadStream, openAsBlob } from "node:fs";
import { basename } from "node:path";
import { blake3Hex, blake3HexOfStream } from "../domain/blake3.ts";

/** Something to upload: a file path, or bytes. */
export type UploadSource = string | Uint8Array;

/** blake3 hex of a file (streamed) or of bytes. */
export function hashSource(source: UploadSource): Promise<string> {
  return typeof source === "string" ? blake3HexOfStream(createReadStream(source)) : blake3Hex(source);
}

/** A Blob over the source; a file path gives a file-backed Blob that streams when sent. */
export async function blobOf(source: UploadSource): Promise<Blob> {
  return typeof source === "string" ? openAsBlob(source) : new Blob([new Uint8Array(source)]);
}

/** The file name to record for a source (the path's base name), or undefined for bytes. */
export function nameOf(source: UploadSource): string | undefined {
  return typeof source === "string" ? basename(source) : undefined;
}
