// Mask family (comfy_extras/nodes_mask.py and LoadImageMask from nodes.py).
import { NodeInputError } from "../errors.ts";
import { decodeFailure, decodeImage } from "../media/image-codec.ts";
import { resize } from "../media/resample.ts";
import { allocFloats, copyFloats, fillFloats, makeImage, makeMask, repeatToBatch, type ImageTensor, type MaskTensor } from "../media/tensors.ts";
import { booleanInput, comboV1, floatInput, intInput, MAX_RESOLUTION, noCheckpoint, socket, type Checkpoint, type NodeDefinition } from "../node-spec.ts";
import { booleanValue, fileInput, imageInput, knownInt, maskInput, numberInput, sameShape, stringValue } from "./helpers.ts";

const MODULE = "comfy_extras.nodes_mask";

/** LoadImageMask: one channel of a file as a mask; the alpha channel is inverted (1 - alpha). */
export const LoadImageMask: NodeDefinition = {
  name: "LoadImageMask",
  display_name: "Load Image (as Mask)",
  category: "mask",
  description: "",
  python_module: "nodes",
  input: {
    required: {
      image: comboV1([], { image_upload: true }),
      channel: comboV1(["alpha", "red", "green", "blue"]),
    },
  },
  output: ["MASK"],
  output_node: false,
  fileInputs: ["image"],
  async run(_ctx, inputs) {
    const file = fileInput(inputs, "image");
    const channel = stringValue(inputs, "channel");
    let decoded;
    try {
      decoded = await decodeImage(file.bytes);
    } catch (err) {
      throw decodeFailure(err, file.name);
    }
    // Only the first frame, as ComfyUI opens the file without iterating frames.
    const { height, width } = decoded.image;
    const pixels = height * width;
    const out = allocFloats(pixels);
    if (channel === "alpha") {
      // A file without alpha is converted to RGBA (opaque), so the mask is all zeros.
      if (decoded.alpha) for (let p = 0; p < pixels; p++) out[p] = 1 - decoded.alpha[p]!;
    } else {
      const c = channel === "red" ? 0 : channel === "green" ? 1 : 2;
      for (let p = 0; p < pixels; p++) out[p] = decoded.image.data[p * 3 + c]!;
    }
    return { result: [makeMask(1, height, width, out)] };
  },
};

/** SolidMask: a 1 x height x width mask of one value. */
export const SolidMask: NodeDefinition = {
  name: "SolidMask",
  display_name: "SolidMask",
  category: "mask",
  description: "",
  python_module: MODULE,
  input: {
    required: {
      value: floatInput({ default: 1.0, min: 0.0, max: 1.0, step: 0.01 }),
      width: intInput({ default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }),
      height: intInput({ default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }),
    },
  },
  output: ["MASK"],
  output_node: false,
  shapes: (l) => {
    const [width, height] = [knownInt(l.width), knownInt(l.height)];
    return [width && height ? { kind: "MASK", batch: 1, height, width } : undefined];
  },
  async run(_ctx, inputs) {
    const mask = makeMask(1, numberInput(inputs, "height"), numberInput(inputs, "width"));
    await fillFloats(mask.data, numberInput(inputs, "value"));
    return { result: [mask] };
  },
};

/** InvertMask: 1 - mask. */
export const InvertMask: NodeDefinition = {
  name: "InvertMask",
  display_name: "InvertMask",
  category: "mask",
  description: "",
  python_module: MODULE,
  input: { required: { mask: socket("MASK") } },
  output: ["MASK"],
  output_node: false,
  shapes: (_l, inputs) => [sameShape(inputs.mask)],
  async run(ctx, inputs) {
    const mask = maskInput(inputs, "mask");
    const out = allocFloats(mask.data.length);
    for (let i = 0; i < out.length; i++) {
      if ((i & 0xfffff) === 0) await ctx.checkpoint();
      out[i] = 1 - mask.data[i]!;
    }
    return { result: [makeMask(mask.batch, mask.height, mask.width, out)] };
  },
};

/** MaskToImage: the mask copied into all three channels. */
export const MaskToImage: NodeDefinition = {
  name: "MaskToImage",
  display_name: "Convert Mask to Image",
  category: "mask",
  description: "",
  python_module: MODULE,
  input: { required: { mask: socket("MASK") } },
  output: ["IMAGE"],
  output_node: false,
  shapes: (_l, { mask }) => [mask?.kind === "MASK" ? { ...mask, kind: "IMAGE" } : undefined],
  async run(ctx, inputs) {
    const mask = maskInput(inputs, "mask");
    const image = makeImage(mask.batch, mask.height, mask.width);
    for (let p = 0; p < mask.data.length; p++) {
      if ((p & 0xfffff) === 0) await ctx.checkpoint();
      const v = mask.data[p]!;
      image.data[p * 3] = v;
      image.data[p * 3 + 1] = v;
      image.data[p * 3 + 2] = v;
    }
    return { result: [image] };
  },
};

const IMAGE_CHANNELS = ["red", "green", "blue", "alpha"] as const;

/** ImageToMask: one channel of every image; "alpha" fails on RGB images as in ComfyUI. */
export const ImageToMask: NodeDefinition = {
  name: "ImageToMask",
  display_name: "Convert Image to Mask",
  category: "mask",
  description: "",
  python_module: MODULE,
  input: { required: { image: socket("IMAGE"), channel: comboV1(IMAGE_CHANNELS) } },
  output: ["MASK"],
  output_node: false,
  shapes: (_l, { image }) => [image?.kind === "IMAGE" ? { ...image, kind: "MASK" } : undefined],
  async run(ctx, inputs) {
    const image = imageInput(inputs, "image");
    const c = (IMAGE_CHANNELS as readonly string[]).indexOf(stringValue(inputs, "channel"));
    if (c < 0 || c >= image.channels) throw new NodeInputError(`The image has no ${stringValue(inputs, "channel")} channel`);
    const mask = makeMask(image.batch, image.height, image.width);
    for (let p = 0; p < mask.data.length; p++) {
      if ((p & 0xfffff) === 0) await ctx.checkpoint();
      mask.data[p] = image.data[p * 3 + c]!;
    }
    return { result: [mask] };
  },
};

/** Pastes source onto destination at (x, y) through an optional mask, like nodes_mask.composite. */
export async function compositeMasked(
  destination: ImageTensor,
  source: ImageTensor,
  x: number,
  y: number,
  resizeSource: boolean,
  mask: MaskTensor | undefined,
  checkpoint: Checkpoint = noCheckpoint,
): Promise<ImageTensor> {
  let src = source;
  if (resizeSource) {
    const r = await resize({ ...src }, destination.width, destination.height, "bilinear", checkpoint);
    src = makeImage(src.batch, destination.height, destination.width, r.data);
  }
  const batch = destination.batch;
  const sw = src.width;
  const sh = src.height;
  const srcData = await repeatToBatch(src.data, sh * sw * 3, src.batch, batch);
  let maskData: Float32Array | null = null;
  if (mask) {
    const m = await resize({ batch: mask.batch, height: mask.height, width: mask.width, channels: 1, data: mask.data }, sw, sh, "bilinear", checkpoint);
    maskData = await repeatToBatch(m.data, sh * sw, mask.batch, batch);
  }
  const left = Math.max(-sw, Math.min(x, destination.width));
  const top = Math.max(-sh, Math.min(y, destination.height));
  const out = allocFloats(destination.data.length);
  await copyFloats(out, destination.data);
  const dw = destination.width;
  const dh = destination.height;
  for (let b = 0; b < batch; b++) {
    for (let sy = 0; sy < sh; sy++) {
      await checkpoint();
      const dy = top + sy;
      if (dy < 0 || dy >= dh) continue;
      for (let sx = 0; sx < sw; sx++) {
        const dx = left + sx;
        if (dx < 0 || dx >= dw) continue;
        const m = maskData ? maskData[(b * sh + sy) * sw + sx]! : 1;
        const si = ((b * sh + sy) * sw + sx) * 3;
        const di = ((b * dh + dy) * dw + dx) * 3;
        for (let c = 0; c < 3; c++) out[di + c] = m * srcData[si + c]! + (1 - m) * out[di + c]!;
      }
    }
  }
  return makeImage(batch, dh, dw, out);
}

/** ImageCompositeMasked: source over destination at (x, y), optionally masked and resized. */
export const ImageCompositeMasked: NodeDefinition = {
  name: "ImageCompositeMasked",
  display_name: "ImageCompositeMasked",
  category: "image",
  description: "",
  python_module: MODULE,
  input: {
    required: {
      destination: socket("IMAGE"),
      source: socket("IMAGE"),
      x: intInput({ default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }),
      y: intInput({ default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }),
      resize_source: booleanInput({ default: false }),
    },
    optional: { mask: socket("MASK") },
  },
  output: ["IMAGE"],
  output_node: false,
  shapes: (_l, inputs) => [sameShape(inputs.destination)],
  async run(ctx, inputs) {
    const mask = inputs.mask === undefined ? undefined : maskInput(inputs, "mask");
    return {
      result: [
        await compositeMasked(
          imageInput(inputs, "destination"),
          imageInput(inputs, "source"),
          numberInput(inputs, "x"),
          numberInput(inputs, "y"),
          booleanValue(inputs, "resize_source", false),
          mask,
          ctx.checkpoint,
        ),
      ],
    };
  },
};

/** The mask family. */
export const maskNodes: readonly NodeDefinition[] = [LoadImageMask, SolidMask, InvertMask, MaskToImage, ImageToMask, ImageCompositeMasked];
