import { createHash } from "node:crypto";
import { crc32 } from "node:zlib";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { NodeInputError } from "../../src/engine/index.ts";
import { makeAudio, makeImage, type Audio, type ImageTensor } from "../../src/engine/media/tensors.ts";
import { FlowgateTone, SaveAudio } from "../../src/engine/nodes/audio.ts";
import { FlowgateSaveFile } from "../../src/engine/nodes/flowgate.ts";
import { FlowgateSaveVideo, SaveAnimatedPNG, SaveAnimatedWEBP } from "../../src/engine/nodes/video.ts";
import { ebmlUint, readEbml, readVerbatimFlac, runNode } from "./helpers.ts";

/** A batch of solid-color frames. */
function frames(colors: [number, number, number][], width = 8, height = 6): ImageTensor {
  const img = makeImage(colors.length, height, width);
  colors.forEach((c, b) => {
    for (let p = 0; p < width * height; p++) img.data.set(c, (b * width * height + p) * 3);
  });
  return img;
}

describe("SaveAudio (FLAC)", () => {
  it("writes valid FLAC: STREAMINFO, CRCs, MD5 and the 16-bit samples", async () => {
    const n = 5000; // more than one 4096-sample block
    const audio = makeAudio(1, 2, n, 22050);
    for (let i = 0; i < n; i++) {
      audio.waveform.data[i] = Math.sin(i / 10) * 0.5;
      audio.waveform.data[n + i] = i % 2 ? 1.5 : -1.5; // clipped to the 16-bit range
    }
    const { files } = await runNode(SaveAudio, { audio, filename_prefix: "audio/ComfyUI" });
    expect(files).toHaveLength(1);
    expect(files![0]).toMatchObject({ extension: "flac", type: "audio", content_type: "audio/flac", uiKey: "audio", prefix: "audio/ComfyUI" });
    const flac = readVerbatimFlac(files![0]!.data);
    expect([flac.sampleRate, flac.channels, flac.bits, flac.total]).toEqual([22050, 2, 16, n]);
    expect(flac.samples[0]![10]).toBe(Math.round(Math.sin(1) * 0.5 * 32767));
    expect(flac.samples[1]![0]).toBe(-32768);
    expect(flac.samples[1]![1]).toBe(32767);
    const interleaved = Buffer.alloc(n * 4);
    for (let i = 0; i < n; i++) {
      interleaved.writeInt16LE(flac.samples[0]![i]!, i * 4);
      interleaved.writeInt16LE(flac.samples[1]![i]!, i * 4 + 2);
    }
    expect(flac.md5.equals(createHash("md5").update(interleaved).digest())).toBe(true);
  });

  it("writes one file per batch item", async () => {
    const { files } = await runNode(SaveAudio, { audio: makeAudio(3, 1, 10, 8000), filename_prefix: "a" });
    expect(files!.map((f) => f.batchIndex)).toEqual([0, 1, 2]);
  });
});

describe("FlowgateTone", () => {
  it("makes a mono sine of the given length, frequency and rate", async () => {
    const audio = (await runNode(FlowgateTone, { seconds: 0.5, frequency: 1000, sample_rate: 8000, amplitude: 0.5 })).result![0] as Audio;
    expect([audio.waveform.batch, audio.waveform.channels, audio.waveform.samples, audio.sample_rate]).toEqual([1, 1, 4000, 8000]);
    expect(audio.waveform.data[2]).toBeCloseTo(0.5, 6); // sin(2π·1000·2/8000) = sin(π/2)
    expect(audio.waveform.data[4]).toBeCloseTo(0, 6);
  });
});

describe("SaveAnimatedWEBP", () => {
  it("writes an animated WebP with one frame per image and delay int(1000 / fps)", async () => {
    const images = frames([
      [1, 0, 0],
      [0, 0, 1],
      [0, 1, 0],
    ]);
    const r = await runNode(SaveAnimatedWEBP, { images, filename_prefix: "anim", fps: 3, lossless: true, quality: 80, method: "fastest" });
    expect(r.ui).toEqual({ animated: [true] });
    expect(r.files![0]).toMatchObject({ type: "image", content_type: "image/webp", uiKey: "images" });
    const meta = await sharp(r.files![0]!.data, { pages: -1 }).metadata();
    expect(meta.pages).toBe(3);
    expect(meta.delay).toEqual([333, 333, 333]);
    const { data } = await sharp(r.files![0]!.data, { pages: -1 }).raw().toBuffer({ resolveWithObject: true });
    const frameBytes = 8 * 6 * 3;
    expect([...data.subarray(frameBytes, frameBytes + 3)]).toEqual([0, 0, 255]);
  });
});

describe("SaveAnimatedPNG", () => {
  it("writes an APNG: acTL frame count, fcTL per frame, and frames that decode", async () => {
    const images = frames(
      [
        [1, 0, 0],
        [0, 1, 0],
      ],
      4,
      3,
    );
    const r = await runNode(SaveAnimatedPNG, { images, filename_prefix: "apng", fps: 10, compress_level: 4 });
    const png = r.files![0]!.data;
    expect(r.files![0]).toMatchObject({ type: "image", content_type: "image/png" });
    const chunks: { type: string; data: Buffer }[] = [];
    for (let at = 8; at < png.length; ) {
      const len = png.readUInt32BE(at);
      const type = png.toString("latin1", at + 4, at + 8);
      const data = png.subarray(at + 8, at + 8 + len);
      expect(png.readUInt32BE(at + 8 + len)).toBe(crc32(png.subarray(at + 4, at + 8 + len)) >>> 0);
      chunks.push({ type, data });
      at += 12 + len;
    }
    const actl = chunks.find((c) => c.type === "acTL")!;
    expect(actl.data.readUInt32BE(0)).toBe(2);
    const fctl = chunks.filter((c) => c.type === "fcTL");
    expect(fctl).toHaveLength(2);
    expect([fctl[1]!.data.readUInt16BE(20), fctl[1]!.data.readUInt16BE(22)]).toEqual([100, 1000]);
    // Rebuild the second frame as a still PNG and decode it.
    const chunk = (type: string, data: Buffer) => {
      const head = Buffer.alloc(8);
      head.writeUInt32BE(data.length);
      head.write(type, 4, "latin1");
      const crc = Buffer.alloc(4);
      crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0);
      return Buffer.concat([head, data, crc]);
    };
    const fdat = Buffer.concat(chunks.filter((c) => c.type === "fdAT").map((c) => c.data.subarray(4)));
    const still = Buffer.concat([png.subarray(0, 8), chunk("IHDR", chunks[0]!.data), chunk("IDAT", fdat), chunk("IEND", Buffer.alloc(0))]);
    const { data } = await sharp(still).raw().toBuffer({ resolveWithObject: true });
    expect([...data.subarray(0, 3)]).toEqual([0, 255, 0]);
  });
});

describe("FlowgateSaveVideo (WebM)", () => {
  it("writes a WebM with a VP8 track and one key frame block per image at the frame rate", async () => {
    const images = frames(
      [
        [1, 0, 0],
        [0, 1, 0],
        [0, 0, 1],
        [1, 1, 1],
      ],
      16,
      10,
    );
    const r = await runNode(FlowgateSaveVideo, { images, filename_prefix: "video/x", fps: 4, quality: 80 });
    const file = r.files![0]!;
    expect(file).toMatchObject({ type: "video", content_type: "video/webm", extension: "webm", uiKey: "video" });
    const [header, segment] = readEbml(file.data);
    expect(header!.id).toBe(0x1a45dfa3);
    const docType = readEbml(header!.data).find((e) => e.id === 0x4282)!;
    expect(docType.data.toString()).toBe("webm");
    expect(segment!.id).toBe(0x18538067);
    const children = readEbml(segment!.data);
    const track = readEbml(readEbml(children.find((e) => e.id === 0x1654ae6b)!.data)[0]!.data);
    expect(track.find((e) => e.id === 0x86)!.data.toString()).toBe("V_VP8");
    const video = readEbml(track.find((e) => e.id === 0xe0)!.data);
    expect([ebmlUint(video.find((e) => e.id === 0xb0)!.data), ebmlUint(video.find((e) => e.id === 0xba)!.data)]).toEqual([16, 10]);
    const blocks = children.filter((e) => e.id === 0x1f43b675).flatMap((c) => readEbml(c.data).filter((e) => e.id === 0xa3));
    expect(blocks).toHaveLength(4);
    blocks.forEach((block, i) => {
      expect(block.data[0]).toBe(0x81); // track 1
      expect(block.data.readInt16BE(1)).toBe(i * 250); // ms at 4 fps
      expect(block.data[3]! & 0x80).toBe(0x80); // key frame
      const vp8 = block.data.subarray(4);
      expect(vp8[0]! & 1).toBe(0); // VP8 key frame flag
      expect([...vp8.subarray(3, 6)]).toEqual([0x9d, 0x01, 0x2a]); // VP8 start code
      expect([vp8.readUInt16LE(6) & 0x3fff, vp8.readUInt16LE(8) & 0x3fff]).toEqual([16, 10]);
    });
  });
});

describe("FlowgateSaveFile", () => {
  it("writes the text with the extension's media type", async () => {
    const r = await runNode(FlowgateSaveFile, { text: '{"a":1}', filename_prefix: "data/out", extension: "json" });
    expect(r.files![0]).toMatchObject({ type: "file", extension: "json", content_type: "application/json", prefix: "data/out" });
    expect(r.files![0]!.data.toString()).toBe('{"a":1}');
    const unknown = await runNode(FlowgateSaveFile, { text: "x", filename_prefix: "f", extension: "dat" });
    expect(unknown.files![0]!.content_type).toBe("application/octet-stream");
  });

  it("rejects an extension that could escape its name", async () => {
    await expect(runNode(FlowgateSaveFile, { text: "x", filename_prefix: "f", extension: "../sh" })).rejects.toBeInstanceOf(NodeInputError);
  });
});
