import { describe, expect, it } from "vitest";
import { newEngine } from "./helpers.ts";

const REQUIRED_NODES = [
  "LoadImage",
  "LoadImageMask",
  "SaveImage",
  "PreviewImage",
  "EmptyImage",
  "ImageScale",
  "ImageScaleBy",
  "ImageInvert",
  "ImageBlur",
  "ImageSharpen",
  "ImageCrop",
  "ImageFlip",
  "ImageRotate",
  "ImageBatch",
  "ImageBlend",
  "ImageCompositeMasked",
  "SolidMask",
  "InvertMask",
  "MaskToImage",
  "ImageToMask",
  "EmptyLatentImage",
  "SaveLatent",
  "PrimitiveString",
  "PrimitiveInt",
  "PrimitiveFloat",
  "PrimitiveBoolean",
  "StringConcatenate",
  "PreviewAny",
  "SaveAnimatedWEBP",
  "SaveAnimatedPNG",
  "SaveAudio",
  "FlowgateSampler",
  "FlowgateDelay",
  "FlowgatePrint",
  "FlowgateTone",
  "FlowgateSaveVideo",
  "FlowgateSaveFile",
  "FlowgatePartnerCall",
];

describe("nodeDefinitions (object_info)", () => {
  it("lists the whole library with ComfyUI's fields", async () => {
    const info = await newEngine().nodeDefinitions();
    expect(Object.keys(info).sort()).toEqual([...REQUIRED_NODES].sort());
    for (const [name, entry] of Object.entries(info)) {
      expect(entry.name).toBe(name);
      expect(typeof entry.display_name).toBe("string");
      expect(typeof entry.category).toBe("string");
      expect(typeof entry.description).toBe("string");
      expect(typeof entry.output_node).toBe("boolean");
      expect(entry.output_is_list).toEqual(entry.output.map(() => false));
      expect(entry.output_name).toHaveLength(entry.output.length);
      expect(entry.input_order.required).toEqual(Object.keys(entry.input.required));
    }
  });

  it("uses ComfyUI's input specs: defaults, bounds, steps and combo options", async () => {
    const info = await newEngine().nodeDefinitions();
    expect(info.ImageScale!.input.required).toEqual({
      image: ["IMAGE"],
      upscale_method: [["nearest-exact", "bilinear", "area", "bicubic", "lanczos"]],
      width: ["INT", { default: 512, min: 0, max: 16384, step: 1 }],
      height: ["INT", { default: 512, min: 0, max: 16384, step: 1 }],
      crop: [["disabled", "center"]],
    });
    expect(info.LoadImage!.input.required.image).toEqual([[], { image_upload: true }]);
    expect(info.LoadImage!.output).toEqual(["IMAGE", "MASK"]);
    expect(info.SaveImage!.input.hidden).toEqual({ prompt: "PROMPT", extra_pnginfo: "EXTRA_PNGINFO" });
    expect(info.SaveImage!.input.required.filename_prefix![1]).toMatchObject({ default: "ComfyUI" });
    expect(info.ImageFlip!.input.required.flip_method).toEqual(["COMBO", { multiselect: false, options: ["x-axis: vertically", "y-axis: horizontally"] }]);
    expect(info.ImageBlend!.input.required.blend_mode).toEqual([["normal", "multiply", "screen", "overlay", "soft_light", "difference"]]);
    expect(info.ImageBlur!.input.required.blur_radius).toEqual(["INT", { default: 1, min: 1, max: 31, step: 1 }]);
    expect(info.EmptyLatentImage!.input.required.width![1]).toMatchObject({ default: 512, min: 16, max: 16384, step: 8 });
    expect(info.SaveAudio!.input.required.filename_prefix).toEqual(["STRING", { default: "audio/ComfyUI" }]);
    expect(info.PreviewAny).toMatchObject({ display_name: "Preview as Text", category: "utilities", output: ["STRING"], output_node: true });
    expect(info.ImageCompositeMasked!.input.optional).toEqual({ mask: ["MASK"] });
    expect(info.FlowgatePartnerCall!.api_node).toBe(true);
  });

  it("hands out copies that callers cannot use to change the engine", async () => {
    const engine = newEngine();
    const info = engine.nodeDefinitionsSync();
    (info.ImageScale!.input.required.width![1] as { max: number }).max = 1;
    expect(engine.nodeDefinitionsSync().ImageScale!.input.required.width![1]).toMatchObject({ max: 16384 });
    expect(
      engine.validateSync({
        "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
        "2": { class_type: "ImageScale", inputs: { image: ["1", 0], upscale_method: "area", width: 100, height: 100, crop: "disabled" } },
        "3": { class_type: "PreviewImage", inputs: { images: ["2", 0] } },
      }).valid,
    ).toBe(true);
  });
});
