import { describe, expect, it } from "vitest";
import { sniff } from "../../src/engine/index.ts";
import { newEngine, node, recorder } from "./helpers.ts";

/** Media type without parameters. */
const essence = (contentType: string) => contentType.split(";")[0]!.trim().toLowerCase();

/** Text-based media types: a sniffer can only say "text" for these. */
const isTextual = (mediaType: string) =>
  mediaType.startsWith("text/") || ["application/json", "application/xml", "application/yaml", "image/svg+xml"].includes(mediaType);

describe("media types of outputs", () => {
  it("every output's bytes sniff as the media type the engine reports, across all six output types", async () => {
    const graph = {
      "1": node("FlowgateSampler", { seed: 11, steps: 2, width: 32, height: 32 }),
      "2": node("SaveImage", { images: ["1", 0], filename_prefix: "img" }),
      "3": node("PreviewImage", { images: ["1", 0] }),
      "4": node("ImageBatch", { image1: ["1", 0], image2: ["5", 0] }),
      "5": node("ImageInvert", { image: ["1", 0] }),
      "6": node("SaveAnimatedWEBP", { images: ["4", 0], filename_prefix: "anim", fps: 6, lossless: true, quality: 80, method: "fastest" }),
      "7": node("SaveAnimatedPNG", { images: ["4", 0], filename_prefix: "anim", fps: 6, compress_level: 4 }),
      "8": node("FlowgateSaveVideo", { images: ["4", 0], filename_prefix: "video/v", fps: 6, quality: 70 }),
      "9": node("FlowgateTone", { seconds: 0.1, frequency: 440, sample_rate: 8000 }),
      "10": node("SaveAudio", { audio: ["9", 0], filename_prefix: "audio/ComfyUI" }),
      "11": node("SaveLatent", { samples: ["1", 1], filename_prefix: "latents/ComfyUI" }),
      "12": node("EmptyLatentImage", { width: 64, height: 64, batch_size: 1 }),
      "13": node("SaveLatent", { samples: ["12", 0], filename_prefix: "latents/empty" }),
      "14": node("PreviewAny", { source: "text ✓" }),
      "15": node("FlowgatePrint", { text: "printed" }),
      "16": node("FlowgateSaveFile", { text: "a,b\n1,2\n", filename_prefix: "table", extension: "csv" }),
      "17": node("FlowgateSaveFile", { text: '{"k": true}', filename_prefix: "doc", extension: "json" }),
    };
    const { rec, options } = recorder();
    await newEngine().execute(graph, options);
    expect(new Set(rec.outputs.map((o) => o.type))).toEqual(new Set(["image", "video", "audio", "text", "file", "latent"]));
    expect(rec.outputs).toHaveLength(12);
    for (const output of rec.outputs) {
      const sniffed = sniff(output.data);
      expect(sniffed, `${output.node_id} ${output.name}`).not.toBeNull();
      const reported = essence(output.content_type);
      if (sniffed!.format === "text") expect(isTextual(reported), `${output.node_id}: ${reported}`).toBe(true);
      else expect(sniffed!.mediaType, `${output.node_id} ${output.name}`).toBe(reported);
    }
    const byNode = Object.fromEntries(rec.outputs.map((o) => [o.node_id, o]));
    expect([byNode["2"]!.type, byNode["6"]!.type, byNode["7"]!.type, byNode["8"]!.type]).toEqual(["image", "image", "image", "video"]);
    expect(sniff(byNode["7"]!.data)!.format).toBe("apng");
    expect([byNode["10"]!.type, byNode["11"]!.type, byNode["14"]!.type, byNode["16"]!.type]).toEqual(["audio", "latent", "text", "file"]);
    expect(byNode["3"]!.folder).toBe("temp");
    expect(byNode["11"]!.name).toMatch(/^ComfyUI_\d{5}_\.latent$/);
  });

  it("sniff tells the formats apart and returns null for unknown binary data", () => {
    expect(sniff(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))!.mediaType).toBe("image/jpeg");
    expect(sniff(Buffer.from("RIFF\0\0\0\0WAVEfmt ", "latin1"))!.mediaType).toBe("audio/wav");
    expect(sniff(Buffer.from([0x00, 0x01, 0x02, 0xff]))).toBeNull();
  });
});
