// Test helpers: graph building, event recording, and independent readers of the formats
// the engine writes (so an encoder bug cannot hide behind its own decoder).
import sharp from "sharp";
import { EmbeddedEngine, type EmbeddedEngineOptions } from "../../src/engine/index.ts";
import type { EngineOutput, ExecuteOptions, NodeDoneEvent, PreviewEvent, ProgressEvent, StartEvent } from "../../src/engine/engine.ts";
import { makeImage, type ImageTensor } from "../../src/engine/media/tensors.ts";
import type { NodeContext, NodeDefinition, NodeResult } from "../../src/engine/node-spec.ts";

/** A graph node literal. */
export function node(class_type: string, inputs: Record<string, unknown> = {}) {
  return { class_type, inputs };
}

/** Everything a run reported, in order. */
export interface Recording {
  events: string[];
  start: StartEvent | null;
  cached: string[] | null;
  started: string[];
  done: NodeDoneEvent[];
  outputs: EngineOutput[];
  progress: ProgressEvent[];
  previews: PreviewEvent[];
  logs: string[];
}

/** Execute options that record every callback, merged with overrides. */
export function recorder(overrides: ExecuteOptions = {}): { rec: Recording; options: ExecuteOptions } {
  const rec: Recording = { events: [], start: null, cached: null, started: [], done: [], outputs: [], progress: [], previews: [], logs: [] };
  const options: ExecuteOptions = {
    onStart: (e) => {
      rec.start = e;
      rec.events.push("start");
    },
    onCached: (c) => {
      rec.cached = c;
      rec.events.push(`cached:${c.join(",")}`);
    },
    onNodeStart: (e) => {
      rec.started.push(e.node_id);
      rec.events.push(`node:${e.node_id}`);
    },
    onNodeDone: (e) => {
      rec.done.push(e);
      rec.events.push(`done:${e.node_id}`);
    },
    onOutput: (o) => {
      rec.outputs.push(o);
      rec.events.push(`output:${o.node_id}`);
    },
    onProgress: (p) => {
      rec.progress.push(p);
    },
    onPreview: (p) => {
      rec.previews.push(p);
    },
    onLog: ({ text }) => {
      rec.logs.push(text);
    },
    ...overrides,
  };
  return { rec, options };
}

/** A fresh engine (its own cache) for one test. */
export function newEngine(options: EmbeddedEngineOptions = {}): EmbeddedEngine {
  return new EmbeddedEngine(options);
}

/** A node context for calling a node's run() directly. */
export function fakeContext(overrides: Partial<NodeContext> = {}): NodeContext & { progressed: [number, number][]; previews: Buffer[]; logs: string[] } {
  const progressed: [number, number][] = [];
  const previews: Buffer[] = [];
  const logs: string[] = [];
  const signal = overrides.signal ?? new AbortController().signal;
  return {
    node_id: "t",
    class_type: "Test",
    signal,
    throwIfAborted: () => signal.throwIfAborted(),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    checkpoint: async () => signal.throwIfAborted(),
    progress: (v, m) => progressed.push([v, m]),
    preview: (b) => previews.push(b),
    log: (t) => logs.push(t),
    partner: null,
    ...overrides,
    progressed,
    previews,
    logs,
  };
}

/** Calls a node's run() with a fake context. */
export async function runNode(def: NodeDefinition, inputs: Record<string, unknown>): Promise<NodeResult> {
  return def.run(fakeContext(), inputs);
}

/** An image from per-pixel RGB triples (0..1), one frame, rows top to bottom. */
export function imageOf(rows: [number, number, number][][]): ImageTensor {
  const h = rows.length;
  const w = rows[0]!.length;
  const data = new Float32Array(h * w * 3);
  for (const [y, row] of rows.entries()) for (const [x, px] of row.entries()) data.set(px, (y * w + x) * 3);
  return makeImage(1, h, w, data);
}

/** Pixel (x, y) of frame b. */
export function pixel(image: ImageTensor, x: number, y: number, b = 0): [number, number, number] {
  const at = ((b * image.height + y) * image.width + x) * 3;
  return [image.data[at]!, image.data[at + 1]!, image.data[at + 2]!];
}

/** Encodes 8-bit RGB(A) pixels as PNG with sharp (test input files). */
export async function pngOf(width: number, height: number, channels: 3 | 4, bytes: number[]): Promise<Buffer> {
  return sharp(Buffer.from(bytes), { raw: { width, height, channels } }).png().toBuffer();
}

/** Decodes an image file to raw 8-bit pixels. */
export async function rawPixels(file: Buffer): Promise<{ data: Buffer; width: number; height: number; channels: number }> {
  const { data, info } = await sharp(file).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

/** Reads a FLAC file of VERBATIM subframes (our writer's subset), checking both CRCs. */
export function readVerbatimFlac(file: Buffer): { sampleRate: number; channels: number; bits: number; total: number; md5: Buffer; samples: Int16Array[] } {
  if (file.toString("latin1", 0, 4) !== "fLaC") throw new Error("no fLaC marker");
  let at = 4;
  let info: { sampleRate: number; channels: number; bits: number; total: number; md5: Buffer } | null = null;
  for (;;) {
    const head = file[at]!;
    const length = file.readUIntBE(at + 1, 3);
    if ((head & 0x7f) === 0) {
      const b = file.subarray(at + 4, at + 4 + length);
      const sampleRate = (b[10]! << 12) | (b[11]! << 4) | (b[12]! >> 4);
      const channels = ((b[12]! >> 1) & 0x7) + 1;
      const bits = (((b[12]! & 1) << 4) | (b[13]! >> 4)) + 1;
      const total = (b[13]! & 0xf) * 2 ** 32 + b.readUInt32BE(14);
      info = { sampleRate, channels, bits, total, md5: Buffer.from(b.subarray(18, 34)) };
    }
    at += 4 + length;
    if (head & 0x80) break;
  }
  if (!info) throw new Error("no STREAMINFO");
  const samples = Array.from({ length: info.channels }, () => new Int16Array(info!.total));
  let written = 0;
  while (at < file.length) {
    const start = at;
    if (file[at] !== 0xff || (file[at + 1]! & 0xfe) !== 0xf8) throw new Error(`no frame sync at ${at}`);
    const blockCode = file[at + 2]! >> 4;
    const rateCode = file[at + 2]! & 0xf;
    at += 4;
    // UTF-8 coded frame number: leading ones give the byte count.
    const lead = file[at]!;
    let n = 1;
    if (lead >= 0xc0) for (let mask = 0x40; lead & mask; mask >>= 1) n++;
    at += n;
    let size = blockCode === 12 ? 4096 : 0;
    if (blockCode === 7) {
      size = file.readUInt16BE(at) + 1;
      at += 2;
    } else if (blockCode === 6) {
      size = file[at]! + 1;
      at += 1;
    }
    if (rateCode === 12) at += 1;
    else if (rateCode === 13 || rateCode === 14) at += 2;
    if (crc8(file.subarray(start, at)) !== file[at]) throw new Error("frame header CRC-8 mismatch");
    at += 1;
    for (let c = 0; c < info.channels; c++) {
      if (file[at] !== 0x02) throw new Error(`not a VERBATIM subframe: ${file[at]}`);
      at += 1;
      for (let i = 0; i < size; i++, at += 2) samples[c]![written + i] = file.readInt16BE(at);
    }
    if (crc16(file.subarray(start, at)) !== file.readUInt16BE(at)) throw new Error("frame CRC-16 mismatch");
    at += 2;
    written += size;
  }
  if (written !== info.total) throw new Error(`frames hold ${written} samples, STREAMINFO says ${info.total}`);
  return { ...info, samples };
}

function crc8(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b;
    for (let i = 0; i < 8; i++) crc = crc & 0x80 ? ((crc << 1) ^ 0x07) & 0xff : (crc << 1) & 0xff;
  }
  return crc;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x8005) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** A parsed EBML element. */
export interface EbmlElement {
  id: number;
  data: Buffer;
}

/** Splits a buffer into consecutive EBML elements. */
export function readEbml(buf: Buffer): EbmlElement[] {
  const out: EbmlElement[] = [];
  let at = 0;
  while (at < buf.length) {
    const idLen = vintLength(buf[at]!);
    let id = 0;
    for (let i = 0; i < idLen; i++) id = id * 256 + buf[at + i]!;
    at += idLen;
    const sizeLen = vintLength(buf[at]!);
    let size = buf[at]! & (0xff >> sizeLen);
    for (let i = 1; i < sizeLen; i++) size = size * 256 + buf[at + i]!;
    at += sizeLen;
    if (at + size > buf.length) throw new Error("EBML element overruns its parent");
    out.push({ id, data: buf.subarray(at, at + size) });
    at += size;
  }
  return out;
}

function vintLength(first: number): number {
  for (let n = 1; n <= 8; n++) if (first & (0x80 >> (n - 1))) return n;
  throw new Error("invalid EBML vint");
}

/** Reads a big-endian unsigned EBML value. */
export function ebmlUint(data: Buffer): number {
  let v = 0;
  for (const b of data) v = v * 256 + b;
  return v;
}
