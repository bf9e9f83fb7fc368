// Post-processing (comfy_extras/nodes_post_processing.py): ImageBlur, ImageSharpen, ImageBlend.
import { NodeInputError } from "../errors.ts";
import { gaussianBlur, sharpen } from "../media/convolve.ts";
import { commonUpscale } from "../media/resample.ts";
import { allocFloats, makeImage, type ImageTensor } from "../media/tensors.ts";
import { comboV1, floatInput, intInput, socket, type NodeDefinition } from "../node-spec.ts";
import { imageInput, numberInput, sameShape, stringValue } from "./helpers.ts";

const MODULE = "comfy_extras.nodes_post_processing";

/** ImageBlur: ComfyUI's Gaussian (radius 1..31, sigma 0.1..10) with reflect padding. */
export const ImageBlur: NodeDefinition = {
  name: "ImageBlur",
  display_name: "ImageBlur",
  category: "image/postprocessing",
  description: "",
  python_module: MODULE,
  input: {
    required: {
      image: socket("IMAGE"),
      blur_radius: intInput({ default: 1, min: 1, max: 31, step: 1 }),
      sigma: floatInput({ default: 1.0, min: 0.1, max: 10.0, step: 0.1 }),
    },
  },
  output: ["IMAGE"],
  output_node: false,
  shapes: (_l, inputs) => [sameShape(inputs.image)],
  async run(ctx, inputs) {
    const image = imageInput(inputs, "image");
    const radius = numberInput(inputs, "blur_radius");
    if (radius === 0) return { result: [image] };
    return { result: [await gaussianBlur(image, radius, numberInput(inputs, "sigma"), ctx.checkpoint)] };
  },
};

/** ImageSharpen: unsharp kernel -10α·G with its centre raised to sum 1, clamped. */
export const ImageSharpen: NodeDefinition = {
  name: "ImageSharpen",
  display_name: "ImageSharpen",
  category: "image/postprocessing",
  description: "",
  python_module: MODULE,
  input: {
    required: {
      image: socket("IMAGE"),
      sharpen_radius: intInput({ default: 1, min: 1, max: 31, step: 1 }),
      sigma: floatInput({ default: 1.0, min: 0.1, max: 10.0, step: 0.01 }),
      alpha: floatInput({ default: 1.0, min: 0.0, max: 5.0, step: 0.01 }),
    },
  },
  output: ["IMAGE"],
  output_node: false,
  shapes: (_l, inputs) => [sameShape(inputs.image)],
  async run(ctx, inputs) {
    const image = imageInput(inputs, "image");
    const radius = numberInput(inputs, "sharpen_radius");
    if (radius === 0) return { result: [image] };
    return { result: [await sharpen(image, radius, numberInput(inputs, "sigma"), numberInput(inputs, "alpha"), ctx.checkpoint)] };
  },
};

const BLEND_MODES = ["normal", "multiply", "screen", "overlay", "soft_light", "difference"] as const;

function softLightG(x: number): number {
  return x <= 0.25 ? ((16 * x - 12) * x + 4) * x : Math.sqrt(x);
}

/** One blend mode applied to a pair of channel values. */
export function blendValue(mode: string, a: number, b: number): number {
  switch (mode) {
    case "normal":
      return b;
    case "multiply":
      return a * b;
    case "screen":
      return 1 - (1 - a) * (1 - b);
    case "overlay":
      return a <= 0.5 ? 2 * a * b : 1 - 2 * (1 - a) * (1 - b);
    case "soft_light":
      return b <= 0.5 ? a - (1 - 2 * b) * a * (1 - a) : a + (2 * b - 1) * (softLightG(a) - a);
    case "difference":
      return a - b;
    default:
      throw new NodeInputError(`Unsupported blend mode: ${mode}`);
  }
}

/** ImageBlend: image1·(1-f) + mode(image1, image2)·f, clamped; image2 resized (bicubic, center) if needed. */
export const ImageBlend: NodeDefinition = {
  name: "ImageBlend",
  display_name: "ImageBlend",
  category: "image/postprocessing",
  description: "",
  python_module: MODULE,
  input: {
    required: {
      image1: socket("IMAGE"),
      image2: socket("IMAGE"),
      blend_factor: floatInput({ default: 0.5, min: 0.0, max: 1.0, step: 0.01 }),
      blend_mode: comboV1(BLEND_MODES),
    },
  },
  output: ["IMAGE"],
  output_node: false,
  shapes: (_l, { image1: a, image2: b }) => [
    a?.kind === "IMAGE" && b?.kind === "IMAGE" ? { kind: "IMAGE", batch: Math.max(a.batch, b.batch), height: a.height, width: a.width } : undefined,
  ],
  async run(ctx, inputs) {
    const a = imageInput(inputs, "image1");
    let b: ImageTensor = imageInput(inputs, "image2");
    const factor = numberInput(inputs, "blend_factor");
    const mode = stringValue(inputs, "blend_mode");
    if (a.height !== b.height || a.width !== b.width) {
      const r = await commonUpscale({ ...b }, a.width, a.height, "bicubic", "center", ctx.checkpoint);
      b = makeImage(b.batch, a.height, a.width, r.data);
    }
    // torch broadcasting over the batch works only when the sizes match or one of them is 1.
    if (a.batch !== b.batch && a.batch !== 1 && b.batch !== 1) {
      throw new NodeInputError(`Cannot blend batches of ${a.batch} and ${b.batch} images`);
    }
    const batch = Math.max(a.batch, b.batch);
    const frame = a.height * a.width * 3;
    const out = allocFloats(batch * frame);
    for (let n = 0; n < batch; n++) {
      const ao = (a.batch === 1 ? 0 : n) * frame;
      const bo = (b.batch === 1 ? 0 : n) * frame;
      for (let i = 0; i < frame; i++) {
        if ((i & 0xfffff) === 0) await ctx.checkpoint();
        const x = a.data[ao + i]!;
        const v = x * (1 - factor) + blendValue(mode, x, b.data[bo + i]!) * factor;
        out[n * frame + i] = v < 0 ? 0 : Math.min(v, 1);
      }
    }
    return { result: [makeImage(batch, a.height, a.width, out)] };
  },
};

/** The post-processing family. */
export const imageFilterNodes: readonly NodeDefinition[] = [ImageBlur, ImageSharpen, ImageBlend];
