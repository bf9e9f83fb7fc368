// What an encoded image's own bytes say: its format, its dimensions, and whether it is whole
// (a PNG ends with its IEND chunk, a JPEG with its end-of-image marker).

export interface ImageFacts {
  format: "image/png" | "image/jpeg";
  width: number;
  height: number;
  whole: boolean;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const IEND = [0x49, 0x45, 0x4e, 0x44];

/** The facts of a PNG or JPEG; undefined for anything else or a header too short to read. */
export function imageFacts(b: Uint8Array): ImageFacts | undefined {
  const u32 = (i: number) => ((b[i]! << 24) | (b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!) >>> 0;
  const u16 = (i: number) => (b[i]! << 8) | b[i + 1]!;
  if (PNG_SIGNATURE.every((x, i) => b[i] === x)) {
    if (b.byteLength < 24) return undefined;
    // The last chunk: length 0, type IEND, then its CRC.
    const whole = b.byteLength >= 12 && u32(b.byteLength - 12) === 0 && IEND.every((x, i) => b[b.byteLength - 8 + i] === x);
    return { format: "image/png", width: u32(16), height: u32(20), whole };
  }
  if (b[0] !== 0xff || b[1] !== 0xd8) return undefined;
  const whole = b[b.byteLength - 2] === 0xff && b[b.byteLength - 1] === 0xd9;
  // Walk the segments up to a start-of-frame marker (SOF0-SOF15 but DHT, JPG and DAC), which holds the size.
  for (let i = 2; i + 9 < b.byteLength; ) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i++;
      continue;
    }
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
      return { format: "image/jpeg", height: u16(i + 5), width: u16(i + 7), whole };
    if (marker === 0xda) return undefined; // image data before any frame header
    i += 2 + u16(i + 2);
  }
  return undefined;
}
