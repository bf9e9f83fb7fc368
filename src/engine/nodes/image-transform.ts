// Geometry of images: ImageScale, ImageScaleBy (nodes.py), ImageCrop, ImageFlip, ImageRotate (nodes_images.py).
import { NodeInputError } from "../errors.ts";
import { commonUpscale, cropPlanes, pyRoundHalfEven, UPSCALE_METHODS, type UpscaleMethod } from "../media/resample.ts";
import { allocFloats, makeImage, type ImageTensor } from "../media/tensors.ts";
import {
  comboV1,
  comboV3,
  floatInput,
  intInput,
  MAX_RESOLUTION,
  socket,
  noCheckpoint,
  type Checkpoint,
  type InputShapes,
  type NodeDefinition,
  type TensorShape,
} from "../node-spec.ts";
import { imageInput, numberInput, sameShape, stringValue } from "./helpers.ts";

/** The known IMAGE input `image`, resized (a new tensor), or undefined. */
function resized(inputs: InputShapes, size: (s: { width: number; height: number }) => [number, number] | null): TensorShape | undefined {
  const image = inputs.image;
  if (image?.kind !== "IMAGE") return undefined;
  const wh = size(image);
  return wh ? { kind: "IMAGE", batch: image.batch, width: wh[0], height: wh[1] } : undefined;
}

const CROP_METHODS = ["disabled", "center"] as const;

async function scaled(image: ImageTensor, width: number, height: number, method: string, crop: string, checkpoint: Checkpoint): Promise<ImageTensor> {
  if (width < 1 || height < 1) throw new NodeInputError(`Cannot scale to ${width}x${height}`);
  if (!(UPSCALE_METHODS as readonly string[]).includes(method)) throw new NodeInputError(`Unknown upscale method ${method}`);
  const r = await commonUpscale({ ...image }, width, height, method as UpscaleMethod, crop === "center" ? "center" : "disabled", checkpoint);
  return makeImage(image.batch, height, width, r.data);
}

/** ImageScale: to width x height; a 0 side keeps the aspect ratio. */
export const ImageScale: NodeDefinition = {
  name: "ImageScale",
  display_name: "Upscale Image",
  category: "image/upscaling",
  description: "",
  python_module: "nodes",
  input: {
    required: {
      image: socket("IMAGE"),
      upscale_method: comboV1(UPSCALE_METHODS),
      width: intInput({ default: 512, min: 0, max: MAX_RESOLUTION, step: 1 }),
      height: intInput({ default: 512, min: 0, max: MAX_RESOLUTION, step: 1 }),
      crop: comboV1(CROP_METHODS),
    },
  },
  output: ["IMAGE"],
  output_node: false,
  shapes: (l, inputs) => {
    if (typeof l.width !== "number" || typeof l.height !== "number") return [undefined];
    const [w, h] = [l.width, l.height];
    if (w === 0 && h === 0) return [inputs.image];
    return [
      resized(inputs, (s) => [
        w === 0 ? Math.max(1, pyRoundHalfEven((s.width * h) / s.height)) : w,
        h === 0 ? Math.max(1, pyRoundHalfEven((s.height * w) / s.width)) : h,
      ]),
    ];
  },
  async run(ctx, inputs) {
    const image = imageInput(inputs, "image");
    let width = numberInput(inputs, "width");
    let height = numberInput(inputs, "height");
    if (width === 0 && height === 0) return { result: [image] };
    if (width === 0) width = Math.max(1, pyRoundHalfEven((image.width * height) / image.height));
    else if (height === 0) height = Math.max(1, pyRoundHalfEven((image.height * width) / image.width));
    return { result: [await scaled(image, width, height, stringValue(inputs, "upscale_method"), stringValue(inputs, "crop"), ctx.checkpoint)] };
  },
};

/** ImageScaleBy: both sides times scale_by, rounded as Python rounds. */
export const ImageScaleBy: NodeDefinition = {
  name: "ImageScaleBy",
  display_name: "Upscale Image By",
  category: "image/upscaling",
  description: "",
  python_module: "nodes",
  input: {
    required: {
      image: socket("IMAGE"),
      upscale_method: comboV1(UPSCALE_METHODS),
      scale_by: floatInput({ default: 1.0, min: 0.01, max: 8.0, step: 0.01 }),
    },
  },
  output: ["IMAGE"],
  output_node: false,
  shapes: (l, inputs) => {
    const scale = l.scale_by;
    if (typeof scale !== "number") return [undefined];
    return [resized(inputs, (s) => [pyRoundHalfEven(s.width * scale), pyRoundHalfEven(s.height * scale)])];
  },
  async run(ctx, inputs) {
    const image = imageInput(inputs, "image");
    const scale = numberInput(inputs, "scale_by");
    const width = pyRoundHalfEven(image.width * scale);
    const height = pyRoundHalfEven(image.height * scale);
    return { result: [await scaled(image, width, height, stringValue(inputs, "upscale_method"), "disabled", ctx.checkpoint)] };
  },
};

/** ImageCrop: a width x height window at (x, y), clamped into the image. */
export const ImageCrop: NodeDefinition = {
  name: "ImageCrop",
  display_name: "Crop Image",
  category: "image/transform",
  description: "",
  python_module: "comfy_extras.nodes_images",
  input: {
    required: {
      image: socket("IMAGE", {}),
      width: intInput({ default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }),
      height: intInput({ default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }),
      x: intInput({ default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }),
      y: intInput({ default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }),
    },
  },
  output: ["IMAGE"],
  output_node: false,
  shapes: (l, inputs) => {
    const { x, y, width, height } = l;
    if (typeof x !== "number" || typeof y !== "number" || typeof width !== "number" || typeof height !== "number") return [undefined];
    return [resized(inputs, (s) => [Math.min(width, s.width - Math.min(x, s.width - 1)), Math.min(height, s.height - Math.min(y, s.height - 1))])];
  },
  run(_ctx, inputs) {
    const image = imageInput(inputs, "image");
    const x = Math.min(numberInput(inputs, "x"), image.width - 1);
    const y = Math.min(numberInput(inputs, "y"), image.height - 1);
    const w = Math.min(numberInput(inputs, "width"), image.width - x);
    const h = Math.min(numberInput(inputs, "height"), image.height - y);
    const r = cropPlanes({ ...image }, x, y, w, h);
    return { result: [makeImage(image.batch, h, w, r.data)] };
  },
};

/** ImageFlip: "x-axis: vertically" mirrors rows, "y-axis: horizontally" mirrors columns. */
export const ImageFlip: NodeDefinition = {
  name: "ImageFlip",
  display_name: "ImageFlip",
  category: "image/transform",
  description: "",
  python_module: "comfy_extras.nodes_images",
  input: {
    required: {
      image: socket("IMAGE", {}),
      flip_method: comboV3(["x-axis: vertically", "y-axis: horizontally"]),
    },
  },
  output: ["IMAGE"],
  output_node: false,
  shapes: (_l, inputs) => [sameShape(inputs.image)],
  async run(ctx, inputs) {
    const image = imageInput(inputs, "image");
    const method = stringValue(inputs, "flip_method");
    const vertical = method.startsWith("x");
    const horizontal = method.startsWith("y");
    const { batch, height: h, width: w } = image;
    const out = allocFloats(image.data.length);
    for (let b = 0; b < batch; b++) {
      for (let y = 0; y < h; y++) {
        await ctx.checkpoint();
        for (let x = 0; x < w; x++) {
          const sy = vertical ? h - 1 - y : y;
          const sx = horizontal ? w - 1 - x : x;
          const from = ((b * h + sy) * w + sx) * 3;
          const to = ((b * h + y) * w + x) * 3;
          out[to] = image.data[from]!;
          out[to + 1] = image.data[from + 1]!;
          out[to + 2] = image.data[from + 2]!;
        }
      }
    }
    return { result: [makeImage(batch, h, w, out)] };
  },
};

/** Rotates clockwise by quarter turns, as torch.rot90(image, k, dims=[2, 1]) does on BHWC. */
export async function rotateClockwise(image: ImageTensor, quarterTurns: number, checkpoint: Checkpoint = noCheckpoint): Promise<ImageTensor> {
  const k = ((quarterTurns % 4) + 4) % 4;
  if (k === 0) return image;
  const { batch, height: h, width: w } = image;
  const outH = k === 2 ? h : w;
  const outW = k === 2 ? w : h;
  const out = allocFloats(image.data.length);
  for (let b = 0; b < batch; b++) {
    for (let y = 0; y < outH; y++) {
      await checkpoint();
      for (let x = 0; x < outW; x++) {
        let sy: number;
        let sx: number;
        if (k === 1) [sy, sx] = [h - 1 - x, y];
        else if (k === 2) [sy, sx] = [h - 1 - y, w - 1 - x];
        else [sy, sx] = [x, w - 1 - y];
        const from = ((b * h + sy) * w + sx) * 3;
        const to = ((b * outH + y) * outW + x) * 3;
        out[to] = image.data[from]!;
        out[to + 1] = image.data[from + 1]!;
        out[to + 2] = image.data[from + 2]!;
      }
    }
  }
  return makeImage(batch, outH, outW, out);
}

function turnsOf(rotation: unknown): number {
  const r = String(rotation);
  return r.startsWith("90") ? 1 : r.startsWith("180") ? 2 : r.startsWith("270") ? 3 : 0;
}

/** ImageRotate: none / 90 / 180 / 270 degrees clockwise. */
export const ImageRotate: NodeDefinition = {
  name: "ImageRotate",
  display_name: "Rotate",
  category: "image/transform",
  description: "",
  python_module: "comfy_extras.nodes_images",
  input: {
    required: {
      image: socket("IMAGE", {}),
      rotation: comboV3(["none", "90 degrees", "180 degrees", "270 degrees"]),
    },
  },
  output: ["IMAGE"],
  output_node: false,
  shapes: (l, inputs) => {
    const turns = turnsOf(l.rotation);
    if (turns === 0) return [inputs.image];
    return [resized(inputs, (s) => (turns === 2 ? [s.width, s.height] : [s.height, s.width]))];
  },
  async run(ctx, inputs) {
    const image = imageInput(inputs, "image");
    return { result: [await rotateClockwise(image, turnsOf(stringValue(inputs, "rotation")), ctx.checkpoint)] };
  },
};

/** The image geometry family. */
export const imageTransformNodes: readonly NodeDefinition[] = [ImageScale, ImageScaleBy, ImageCrop, ImageFlip, ImageRotate];
