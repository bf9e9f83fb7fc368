// A small FLAC writer: 16-bit samples in VERBATIM subframes. Files are larger than a
// predictive encoder's but are valid FLAC that any decoder reads, with the STREAMINFO MD5 set.
import { createHash } from "node:crypto";

const BLOCK_SIZE = 4096;

/** Encodes interleaving-free channel data (channels x samples, floats in -1..1) as FLAC. */
export function encodeFlac(channelData: Float32Array[], sampleRate: number): Buffer {
  const channels = channelData.length;
  if (channels < 1 || channels > 8) throw new Error(`FLAC takes 1 to 8 channels, got ${channels}`);
  if (!Number.isInteger(sampleRate) || sampleRate < 1 || sampleRate > 655350) throw new Error(`bad sample rate ${sampleRate}`);
  const total = channelData[0]!.length;
  const pcm = channelData.map(toInt16);
  const parts: Buffer[] = [Buffer.from("fLaC", "latin1"), streamInfo(pcm, sampleRate, total)];
  let frameNumber = 0;
  for (let start = 0; start < total; start += BLOCK_SIZE) {
    const size = Math.min(BLOCK_SIZE, total - start);
    parts.push(frame(pcm, start, size, frameNumber++, sampleRate));
  }
  return Buffer.concat(parts);
}

function toInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const v = Math.round((samples[i] ?? 0) * 32767);
    out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : Number.isNaN(v) ? 0 : v;
  }
  return out;
}

function streamInfo(pcm: Int16Array[], sampleRate: number, total: number): Buffer {
  const header = Buffer.from([0x80, 0, 0, 34]); // last metadata block, STREAMINFO, 34 bytes
  const body = new BitWriter();
  const minBlock = total >= BLOCK_SIZE ? BLOCK_SIZE : Math.max(16, total);
  body.write(minBlock, 16);
  body.write(BLOCK_SIZE, 16);
  body.write(0, 24); // min frame size unknown
  body.write(0, 24); // max frame size unknown
  body.write(sampleRate, 20);
  body.write(pcm.length - 1, 3);
  body.write(15, 5); // 16 bits per sample
  body.write(Math.floor(total / 2 ** 32), 4);
  body.write(total >>> 0, 32);
  const md5 = createHash("md5");
  // MD5 of the signed little-endian interleaved samples, as the format defines.
  const interleaved = Buffer.alloc(total * pcm.length * 2);
  for (let i = 0; i < total; i++) for (let c = 0; c < pcm.length; c++) interleaved.writeInt16LE(pcm[c]![i]!, (i * pcm.length + c) * 2);
  md5.update(interleaved);
  return Buffer.concat([header, body.bytes(), md5.digest()]);
}

const RATE_CODES = new Map<number, number>([
  [88200, 1],
  [176400, 2],
  [192000, 3],
  [8000, 4],
  [16000, 5],
  [22050, 6],
  [24000, 7],
  [32000, 8],
  [44100, 9],
  [48000, 10],
  [96000, 11],
]);

function frame(pcm: Int16Array[], start: number, size: number, frameNumber: number, sampleRate: number): Buffer {
  const head = new BitWriter();
  head.write(0b11111111111110, 14); // sync
  head.write(0, 1);
  head.write(0, 1); // fixed block size stream
  const blockCode = size === BLOCK_SIZE ? 12 : 7; // 12 = 4096; 7 = 16-bit (size-1) follows
  head.write(blockCode, 4);
  let rateCode = RATE_CODES.get(sampleRate);
  if (rateCode === undefined) rateCode = sampleRate % 10 === 0 && sampleRate / 10 <= 65535 ? 14 : sampleRate <= 65535 ? 13 : 0;
  head.write(rateCode, 4);
  head.write(pcm.length - 1, 4); // independent channels
  head.write(0b100, 3); // 16 bits per sample
  head.write(0, 1);
  for (const byte of utf8Number(frameNumber)) head.write(byte, 8);
  if (blockCode === 7) head.write(size - 1, 16);
  if (rateCode === 13) head.write(sampleRate, 16);
  if (rateCode === 14) head.write(sampleRate / 10, 16);
  const headBytes = head.bytes();
  // Subframe header (8 bits) and 16-bit samples keep the body byte-aligned: write bytes directly.
  const body = Buffer.alloc(pcm.length * (1 + 2 * size));
  let at = 0;
  for (const channel of pcm) {
    body[at++] = 0b00000010; // zero pad bit, VERBATIM (000001), no wasted bits
    for (let i = 0; i < size; i++, at += 2) body.writeInt16BE(channel[start + i]!, at);
  }
  const withCrc8 = Buffer.concat([headBytes, Buffer.from([crc8(headBytes)]), body]);
  const crc = Buffer.alloc(2);
  crc.writeUInt16BE(crc16(withCrc8), 0);
  return Buffer.concat([withCrc8, crc]);
}

/** FLAC's UTF-8-like coding of the frame number (1 to 7 bytes, up to 36 bits). */
export function utf8Number(n: number): number[] {
  if (n < 0x80) return [n];
  const limits = [0x800, 0x10000, 0x200000, 0x4000000, 0x80000000, 2 ** 36];
  const count = limits.findIndex((limit) => n < limit) + 2;
  if (count < 2) throw new Error("frame number too large");
  const bytes: number[] = [];
  let value = n;
  for (let i = 0; i < count - 1; i++) {
    bytes.unshift(0x80 | (value % 64));
    value = Math.floor(value / 64);
  }
  bytes.unshift(((0xff << (8 - count)) & 0xff) | value);
  return bytes;
}

const CRC8_TABLE = buildTable(0x07, 8);
const CRC16_TABLE = buildTable(0x8005, 16);

function buildTable(poly: number, width: 8 | 16): Uint16Array {
  const top = 1 << (width - 1);
  const mask = (1 << width) - 1;
  const table = new Uint16Array(256);
  for (let n = 0; n < 256; n++) {
    let crc = n << (width - 8);
    for (let i = 0; i < 8; i++) crc = crc & top ? ((crc << 1) ^ poly) & mask : (crc << 1) & mask;
    table[n] = crc;
  }
  return table;
}

/** CRC-8, polynomial x^8 + x^2 + x + 1, as the frame header uses. */
export function crc8(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) crc = CRC8_TABLE[crc ^ b]!;
  return crc;
}

/** CRC-16, polynomial x^16 + x^15 + x^2 + 1, over the whole frame. */
export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[(crc >> 8) ^ b]!;
  return crc;
}

/** Big-endian bit packer. */
class BitWriter {
  private readonly out: number[] = [];
  private acc = 0;
  private bits = 0;

  write(value: number, width: number): void {
    for (let i = width - 1; i >= 0; i--) {
      this.acc = (this.acc << 1) | (Math.floor(value / 2 ** i) & 1);
      this.bits++;
      if (this.bits === 8) {
        this.out.push(this.acc);
        this.acc = 0;
        this.bits = 0;
      }
    }
  }

  bytes(): Buffer {
    const tail = this.bits > 0 ? [(this.acc << (8 - this.bits)) & 0xff] : [];
    return Buffer.from([...this.out, ...tail]);
  }
}
