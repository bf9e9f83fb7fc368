// Image family (ComfyUI nodes.py): LoadImage, SaveImage, PreviewImage, EmptyImage, ImageInvert, ImageBatch.
import { decodeFailure, decodeImage, maskFromAlpha } from "../media/image-codec.ts";
import { commonUpscale } from "../media/resample.ts";
import { fillPattern } from "../media/pixel-kernels.ts";
import { allocFloats, copyFloats, makeImage } from "../media/tensors.ts";
import { comboV1, intInput, MAX_RESOLUTION, socket, stringInput, type NodeDefinition } from "../node-spec.ts";
import { fileInput, imageInput, knownInt, numberInput, pngFiles, pngLimit, sameShape, stringValue, tempSuffix } from "./helpers.ts";

const SAVE_HIDDEN = { prompt: "PROMPT", extra_pnginfo: "EXTRA_PNGINFO" } as const;

/** LoadImage: an upload name or a core/ASSET reference; IMAGE plus MASK = 1 - alpha. */
export const LoadImage: NodeDefinition = {
  name: "LoadImage",
  display_name: "Load Image",
  category: "image",
  description: "",
  python_module: "nodes",
  // The option list is the caller's uploads, which the engine cannot list; see validate.ts.
  input: { required: { image: comboV1([], { image_upload: true }) } },
  output: ["IMAGE", "MASK"],
  output_node: false,
  fileInputs: ["image"],
  async run(_ctx, inputs) {
    const file = fileInput(inputs, "image");
    let decoded;
    try {
      decoded = await decodeImage(file.bytes);
    } catch (err) {
      throw decodeFailure(err, file.name);
    }
    return { result: [decoded.image, maskFromAlpha(decoded)] };
  },
};

/** SaveImage: PNG files named prefix_00001_.png, compress level 4, in the output folder. */
export const SaveImage: NodeDefinition = {
  name: "SaveImage",
  display_name: "Save Image",
  category: "image",
  description: "Saves the input images to your ComfyUI output directory.",
  python_module: "nodes",
  input: {
    required: {
      images: socket("IMAGE", { tooltip: "The images to save." }),
      filename_prefix: stringInput({
        default: "ComfyUI",
        tooltip:
          "The prefix for the file to save. This may include formatting information such as %date:yyyy-MM-dd% or %Empty Latent Image.width% to include values from nodes.",
      }),
    },
    hidden: SAVE_HIDDEN,
  },
  output: [],
  output_node: true,
  limits: (_l, inputs) => pngLimit(inputs.images),
  async run(_ctx, inputs) {
    const images = imageInput(inputs, "images");
    return { files: await pngFiles(images, stringValue(inputs, "filename_prefix", "ComfyUI"), "output", 4) };
  },
};

/** PreviewImage: like SaveImage but temp files (still reported as outputs), compress level 1. */
export const PreviewImage: NodeDefinition = {
  name: "PreviewImage",
  display_name: "Preview Image",
  category: "image",
  description: "Saves the input images to your ComfyUI output directory.",
  python_module: "nodes",
  input: { required: { images: socket("IMAGE") }, hidden: SAVE_HIDDEN },
  output: [],
  output_node: true,
  limits: (_l, inputs) => pngLimit(inputs.images),
  async run(_ctx, inputs) {
    const images = imageInput(inputs, "images");
    return { files: await pngFiles(images, `ComfyUI${tempSuffix()}`, "temp", 1) };
  },
};

/** EmptyImage: a batch filled with one 0xRRGGBB color. */
export const EmptyImage: NodeDefinition = {
  name: "EmptyImage",
  display_name: "EmptyImage",
  category: "image",
  description: "",
  python_module: "nodes",
  input: {
    required: {
      width: intInput({ default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }),
      height: intInput({ default: 512, min: 1, max: MAX_RESOLUTION, step: 1 }),
      batch_size: intInput({ default: 1, min: 1, max: 4096 }),
      color: intInput({ default: 0, min: 0, max: 0xffffff, step: 1, display: "color" }),
    },
  },
  output: ["IMAGE"],
  output_node: false,
  shapes: (l) => {
    const [width, height, batch] = [knownInt(l.width), knownInt(l.height), knownInt(l.batch_size ?? 1)];
    return [width && height && batch ? { kind: "IMAGE", batch, height, width } : undefined];
  },
  async run(_ctx, inputs) {
    const width = numberInput(inputs, "width");
    const height = numberInput(inputs, "height");
    const batch = numberInput(inputs, "batch_size", 1);
    const color = numberInput(inputs, "color", 0);
    const rgb = [((color >> 16) & 0xff) / 0xff, ((color >> 8) & 0xff) / 0xff, (color & 0xff) / 0xff] as const;
    const image = makeImage(batch, height, width);
    await fillPattern(image.data, Float32Array.from(rgb));
    return { result: [image] };
  },
};

/** ImageInvert: 1 - pixel. */
export const ImageInvert: NodeDefinition = {
  name: "ImageInvert",
  display_name: "Invert Image",
  category: "image",
  description: "",
  python_module: "nodes",
  input: { required: { image: socket("IMAGE") } },
  output: ["IMAGE"],
  output_node: false,
  shapes: (_l, inputs) => [sameShape(inputs.image)],
  async run(ctx, inputs) {
    const image = imageInput(inputs, "image");
    const out = allocFloats(image.data.length);
    for (let i = 0; i < out.length; i++) {
      out[i] = 1 - image.data[i]!;
      if ((i & 0xfffff) === 0) await ctx.checkpoint();
    }
    return { result: [makeImage(image.batch, image.height, image.width, out)] };
  },
};

/** ImageBatch: image1 then image2, image2 resized (bilinear, center crop) to image1's size when needed. */
export const ImageBatch: NodeDefinition = {
  name: "ImageBatch",
  display_name: "Batch Images",
  category: "image",
  description: "",
  python_module: "nodes",
  input: { required: { image1: socket("IMAGE"), image2: socket("IMAGE") } },
  output: ["IMAGE"],
  output_node: false,
  shapes: (_l, { image1: a, image2: b }) => [
    a?.kind === "IMAGE" && b?.kind === "IMAGE" ? { kind: "IMAGE", batch: a.batch + b.batch, height: a.height, width: a.width } : undefined,
  ],
  async run(ctx, inputs) {
    const a = imageInput(inputs, "image1");
    let b = imageInput(inputs, "image2");
    if (a.height !== b.height || a.width !== b.width) {
      const r = await commonUpscale({ ...b, channels: 3 }, a.width, a.height, "bilinear", "center", ctx.checkpoint);
      b = makeImage(b.batch, a.height, a.width, r.data);
    }
    const out = allocFloats(a.data.length + b.data.length);
    await copyFloats(out, a.data, 0);
    await copyFloats(out, b.data, a.data.length);
    return { result: [makeImage(a.batch + b.batch, a.height, a.width, out)] };
  },
};

/** The image family. */
export const imageNodes: readonly NodeDefinition[] = [LoadImage, SaveImage, PreviewImage, EmptyImage, ImageInvert, ImageBatch];
