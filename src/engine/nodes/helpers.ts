// Small helpers shared by node families: typed access to inputs and image file outputs.
import { NodeInputError } from "../errors.ts";
import { pngProblem } from "../media/encoder-limits.ts";
import { encodePng } from "../media/image-codec.ts";
import { isAudio, isImage, isLatent, isMask, type Audio, type ImageTensor, type Latent, type MaskTensor } from "../media/tensors.ts";
import type { NodeFile, ResolvedFile, TensorShape } from "../node-spec.ts";

/** The IMAGE input `name`, or an invalid_input failure. */
export function imageInput(inputs: Record<string, unknown>, name: string): ImageTensor {
  const v = inputs[name];
  if (!isImage(v)) throw new NodeInputError(`Input '${name}' is not an IMAGE`);
  return v;
}

/** The MASK input `name` (undefined allowed when optional). */
export function maskInput(inputs: Record<string, unknown>, name: string): MaskTensor {
  const v = inputs[name];
  if (!isMask(v)) throw new NodeInputError(`Input '${name}' is not a MASK`);
  return v;
}

/** The LATENT input `name`. */
export function latentInput(inputs: Record<string, unknown>, name: string): Latent {
  const v = inputs[name];
  if (!isLatent(v)) throw new NodeInputError(`Input '${name}' is not a LATENT`);
  return v;
}

/** The AUDIO input `name`. */
export function audioInput(inputs: Record<string, unknown>, name: string): Audio {
  const v = inputs[name];
  if (!isAudio(v)) throw new NodeInputError(`Input '${name}' is not AUDIO`);
  return v;
}

/** A numeric input (validation already coerced literals; links may carry anything). */
export function numberInput(inputs: Record<string, unknown>, name: string, fallback?: number): number {
  const v = inputs[name] ?? fallback;
  if (typeof v !== "number" || Number.isNaN(v)) throw new NodeInputError(`Input '${name}' is not a number`);
  return v;
}

/** A string input. */
export function stringValue(inputs: Record<string, unknown>, name: string, fallback?: string): string {
  const v = inputs[name] ?? fallback;
  if (typeof v !== "string") throw new NodeInputError(`Input '${name}' is not a string`);
  return v;
}

/** A boolean input. */
export function booleanValue(inputs: Record<string, unknown>, name: string, fallback?: boolean): boolean {
  const v = inputs[name] ?? fallback;
  if (typeof v !== "boolean") throw new NodeInputError(`Input '${name}' is not a boolean`);
  return v;
}

/** A resolved file input (the engine resolves upload names and core/ASSET references). */
export function fileInput(inputs: Record<string, unknown>, name: string): ResolvedFile {
  const v = inputs[name] as ResolvedFile | undefined;
  if (!v || !Buffer.isBuffer(v.bytes)) throw new NodeInputError(`Input '${name}' is not a file`);
  return v;
}

/** PNG files for every image of a batch, as SaveImage and PreviewImage write them. */
export async function pngFiles(images: ImageTensor, prefix: string, folder: "output" | "temp", compressionLevel: number): Promise<NodeFile[]> {
  const files: NodeFile[] = [];
  for (let b = 0; b < images.batch; b++) {
    files.push({
      prefix,
      extension: "png",
      uiKey: "images",
      type: "image",
      content_type: "image/png",
      data: await encodePng(images, b, compressionLevel),
      folder,
      width: images.width,
      height: images.height,
      batchIndex: b,
    });
  }
  return files;
}

/** ComfyUI's temp-file prefix suffix: "_temp_" and five random letters (its alphabet, typo included). */
export function tempSuffix(): string {
  const letters = "abcdefghijklmnopqrstupvxyz";
  let s = "_temp_";
  for (let i = 0; i < 5; i++) s += letters[Math.floor(Math.random() * letters.length)];
  return s;
}

/** A literal positive integer (a size known at validation), or undefined. */
export function knownInt(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : undefined;
}

/** A new tensor the size of an image or mask input (a per-pixel operation), if that is known. */
export function sameShape(input: TensorShape | undefined): TensorShape | undefined {
  return input ? { ...input } : undefined;
}

/** The known image size of `images` if PNG cannot hold its frames. */
export function pngLimit(images: TensorShape | undefined): { field: string; message: string } | null {
  const problem = images?.kind === "IMAGE" ? pngProblem(images.width, images.height) : null;
  return problem ? { field: "images", message: problem } : null;
}
