// Animated PNG assembly: sharp (libvips) writes still PNGs only, so each frame is encoded
// by sharp and the frames' IDAT streams are stitched into an APNG here.
import { crc32 } from "node:zlib";

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** One chunk of a PNG file. */
export interface PngChunk {
  type: string;
  data: Buffer;
}

/** Splits a PNG file into its chunks. */
export function readPngChunks(png: Buffer): PngChunk[] {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error("not a PNG file");
  const chunks: PngChunk[] = [];
  let at = 8;
  while (at + 12 <= png.length) {
    const length = png.readUInt32BE(at);
    const type = png.toString("latin1", at + 4, at + 8);
    chunks.push({ type, data: png.subarray(at + 8, at + 8 + length) });
    at += 12 + length;
  }
  return chunks;
}

/** Serialises one chunk with its CRC. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

/** Joins still PNG frames of equal size into one looping APNG; delay in milliseconds. */
export function assembleApng(frames: Buffer[], delayMs: number): Buffer {
  if (frames.length === 0) throw new Error("no frames");
  if (frames.length === 1) return frames[0]!;
  const parsed = frames.map(readPngChunks);
  const ihdr = parsed[0]!.find((c) => c.type === "IHDR");
  if (!ihdr) throw new Error("PNG frame without IHDR");
  const width = ihdr.data.readUInt32BE(0);
  const height = ihdr.data.readUInt32BE(4);
  const parts: Buffer[] = [SIGNATURE, pngChunk("IHDR", ihdr.data)];
  const actl = Buffer.alloc(8);
  actl.writeUInt32BE(frames.length, 0);
  actl.writeUInt32BE(0, 4); // 0 plays = loop forever, as ComfyUI's PIL call does
  parts.push(pngChunk("acTL", actl));
  let sequence = 0;
  parsed.forEach((chunks, index) => {
    const fctl = Buffer.alloc(26);
    fctl.writeUInt32BE(sequence++, 0);
    fctl.writeUInt32BE(width, 4);
    fctl.writeUInt32BE(height, 8);
    fctl.writeUInt32BE(0, 12);
    fctl.writeUInt32BE(0, 16);
    fctl.writeUInt16BE(Math.min(65535, delayMs), 20);
    fctl.writeUInt16BE(1000, 22);
    fctl.writeUInt8(0, 24); // dispose: none
    fctl.writeUInt8(0, 25); // blend: source
    parts.push(pngChunk("fcTL", fctl));
    for (const chunk of chunks) {
      if (chunk.type !== "IDAT") continue;
      if (index === 0) {
        parts.push(pngChunk("IDAT", chunk.data));
      } else {
        const seq = Buffer.alloc(4);
        seq.writeUInt32BE(sequence++, 0);
        parts.push(pngChunk("fdAT", Buffer.concat([seq, chunk.data])));
      }
    }
  });
  parts.push(pngChunk("IEND", Buffer.alloc(0)));
  return Buffer.concat(parts);
}
