// Animation and video writers: SaveAnimatedWEBP, SaveAnimatedPNG (nodes_images.py) and FlowgateSaveVideo.
import { assembleApng } from "../media/apng.ts";
import { encodeAnimatedWebp, encodeLossyWebp, encodePng } from "../media/image-codec.ts";
import { webpProblem } from "../media/encoder-limits.ts";
import { muxWebm, vp8FromWebp } from "../media/webm.ts";
import { booleanInput, comboV3, floatInput, intInput, socket, stringInput, type NodeDefinition } from "../node-spec.ts";
import { booleanValue, imageInput, numberInput, pngLimit, stringValue } from "./helpers.ts";
import type { InputShapes } from "../node-spec.ts";

/** The known image size of `images` if WebP cannot hold it (`stacked`: the whole batch is one encoder input). */
function webpLimit(inputs: InputShapes, stacked: boolean): { field: string; message: string } | null {
  const s = inputs.images;
  const problem = s?.kind === "IMAGE" ? webpProblem(s.width, s.height, s.batch, stacked) : null;
  return problem ? { field: "images", message: problem } : null;
}

const SAVE_HIDDEN = { prompt: "PROMPT", extra_pnginfo: "EXTRA_PNGINFO" } as const;
const WEBP_METHODS: Record<string, number> = { default: 4, fastest: 0, slowest: 6 };

/** SaveAnimatedWEBP: the batch as one animated WebP; an image output (ComfyUI lists it under images, animated). */
export const SaveAnimatedWEBP: NodeDefinition = {
  name: "SaveAnimatedWEBP",
  display_name: "SaveAnimatedWEBP",
  category: "image/animation",
  description: "",
  python_module: "comfy_extras.nodes_images",
  input: {
    required: {
      images: socket("IMAGE", {}),
      filename_prefix: stringInput({ default: "ComfyUI", multiline: false }),
      fps: floatInput({ default: 6.0, min: 0.01, max: 1000.0, step: 0.01 }),
      lossless: booleanInput({ default: true }),
      quality: intInput({ default: 80, min: 0, max: 100 }),
      method: comboV3(Object.keys(WEBP_METHODS)),
    },
    hidden: SAVE_HIDDEN,
  },
  output: [],
  output_node: true,
  limits: (_l, inputs) => webpLimit(inputs, true),
  async run(_ctx, inputs) {
    const images = imageInput(inputs, "images");
    const data = await encodeAnimatedWebp(images, {
      fps: numberInput(inputs, "fps"),
      lossless: booleanValue(inputs, "lossless", true),
      quality: numberInput(inputs, "quality", 80),
      method: WEBP_METHODS[stringValue(inputs, "method", "default")] ?? 4,
    });
    return {
      ui: { animated: [images.batch > 1] },
      files: [
        {
          prefix: stringValue(inputs, "filename_prefix", "ComfyUI"),
          extension: "webp",
          uiKey: "images",
          type: "image",
          content_type: "image/webp",
          data,
          folder: "output",
          width: images.width,
          height: images.height,
        },
      ],
    };
  },
};

/** SaveAnimatedPNG: the batch as one APNG; an image output, image/png (an APNG is a PNG). */
export const SaveAnimatedPNG: NodeDefinition = {
  name: "SaveAnimatedPNG",
  display_name: "SaveAnimatedPNG",
  category: "image/animation",
  description: "",
  python_module: "comfy_extras.nodes_images",
  input: {
    required: {
      images: socket("IMAGE", {}),
      filename_prefix: stringInput({ default: "ComfyUI", multiline: false }),
      fps: floatInput({ default: 6.0, min: 0.01, max: 1000.0, step: 0.01 }),
      compress_level: intInput({ default: 4, min: 0, max: 9 }),
    },
    hidden: SAVE_HIDDEN,
  },
  output: [],
  output_node: true,
  limits: (_l, inputs) => pngLimit(inputs.images),
  async run(ctx, inputs) {
    const images = imageInput(inputs, "images");
    const level = numberInput(inputs, "compress_level", 4);
    const frames: Buffer[] = [];
    for (let b = 0; b < images.batch; b++) {
      ctx.throwIfAborted();
      frames.push(await encodePng(images, b, level));
    }
    return {
      ui: { animated: [images.batch > 1] },
      files: [
        {
          prefix: stringValue(inputs, "filename_prefix", "ComfyUI"),
          extension: "png",
          uiKey: "images",
          type: "image",
          content_type: "image/png",
          data: assembleApng(frames, Math.trunc(1000 / numberInput(inputs, "fps"))),
          folder: "output",
          width: images.width,
          height: images.height,
        },
      ],
    };
  },
};

/** FlowgateSaveVideo: the batch as a WebM video (VP8 key frames at a constant frame rate). */
export const FlowgateSaveVideo: NodeDefinition = {
  name: "FlowgateSaveVideo",
  display_name: "Save Video (flowgate, WebM)",
  category: "flowgate/video",
  description: "Writes an image batch as a WebM video, one VP8 key frame per image.",
  python_module: "custom_nodes.flowgate",
  input: {
    required: {
      images: socket("IMAGE"),
      filename_prefix: stringInput({ default: "video/flowgate" }),
      fps: floatInput({ default: 8.0, min: 0.1, max: 120.0, step: 0.1 }),
      quality: intInput({ default: 80, min: 1, max: 100, step: 1 }),
    },
  },
  output: [],
  output_node: true,
  limits: (_l, inputs) => webpLimit(inputs, false),
  async run(ctx, inputs) {
    const images = imageInput(inputs, "images");
    const quality = numberInput(inputs, "quality", 80);
    const frames: Buffer[] = [];
    for (let b = 0; b < images.batch; b++) {
      ctx.throwIfAborted();
      frames.push(vp8FromWebp(await encodeLossyWebp(images, b, quality)));
      ctx.progress(b + 1, images.batch);
    }
    return {
      files: [
        {
          prefix: stringValue(inputs, "filename_prefix", "video/flowgate"),
          extension: "webm",
          uiKey: "video",
          type: "video",
          content_type: "video/webm",
          data: muxWebm(frames, images.width, images.height, numberInput(inputs, "fps")),
          folder: "output",
          width: images.width,
          height: images.height,
        },
      ],
    };
  },
};

/** The animation and video family. */
export const videoNodes: readonly NodeDefinition[] = [SaveAnimatedWEBP, SaveAnimatedPNG, FlowgateSaveVideo];
