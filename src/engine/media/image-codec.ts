// Image decoding and encoding through sharp.
import sharp from "sharp";
import { isAbortError, NodeInputError } from "../errors.ts";
import { chargeAllocation, cooperate, OutOfMemoryError } from "../run-scope.ts";
import { pngProblem, webpProblem } from "./encoder-limits.ts";
import { allocFloats, frameToRgb8, framesToRgb8, makeImage, makeMask, type ImageTensor, type MaskTensor } from "./tensors.ts";

/** A decoded file: RGB frames, and alpha frames when the file has an alpha channel. */
export interface DecodedImage {
  image: ImageTensor;
  /** Alpha in 0..1 per frame, or null when the file has none. */
  alpha: Float32Array | null;
  format: string;
}

/** Decodes PNG, JPEG, WebP, GIF, TIFF, AVIF... into float RGB, every frame of an animation included. */
export async function decodeImage(bytes: Buffer): Promise<DecodedImage> {
  const meta = await sharp(bytes, { pages: -1 }).metadata();
  const pages = meta.pages ?? 1;
  let pipeline = sharp(bytes, { pages: pages > 1 ? -1 : 1 });
  // EXIF orientation is applied as ComfyUI's exif_transpose does; animations carry none.
  if (pages === 1) pipeline = pipeline.rotate();
  const { data, info } = await pipeline.toColourspace("srgb").raw({ depth: "uchar" }).toBuffer({ resolveWithObject: true });
  // sharp decoded off the event loop; the job pays for its bytes before the float copy is made.
  chargeAllocation(data.length);
  const frameHeight = pages > 1 ? (info.pageHeight ?? meta.pageHeight ?? info.height) : info.height;
  const frames = Math.max(1, Math.floor(info.height / frameHeight));
  const width = info.width;
  const channels = info.channels;
  const hasAlpha = channels === 4 || channels === 2;
  const pixels = frames * frameHeight * width;
  const rgb = allocFloats(pixels * 3);
  const alpha = hasAlpha ? allocFloats(pixels) : null;
  for (let p = 0; p < pixels; p++) {
    if ((p & 0xfffff) === 0) await cooperate();
    const s = p * channels;
    if (channels >= 3) {
      rgb[p * 3] = data[s]! / 255;
      rgb[p * 3 + 1] = data[s + 1]! / 255;
      rgb[p * 3 + 2] = data[s + 2]! / 255;
    } else {
      const g = data[s]! / 255;
      rgb[p * 3] = g;
      rgb[p * 3 + 1] = g;
      rgb[p * 3 + 2] = g;
    }
    if (alpha) alpha[p] = data[s + channels - 1]! / 255;
  }
  return { image: makeImage(frames, frameHeight, width, rgb), alpha, format: meta.format ?? "unknown" };
}

/** A decode's failure as a node reports it: the file is invalid, unless the budget or a cancel stopped it. */
export function decodeFailure(err: unknown, name: string): unknown {
  return err instanceof OutOfMemoryError || isAbortError(err) ? err : new NodeInputError(`Invalid image file: ${name}`);
}

/** ComfyUI's LoadImage mask: 1 - alpha, or a 64x64 zero mask per frame when there is no alpha. */
export function maskFromAlpha(decoded: DecodedImage): MaskTensor {
  const { image, alpha } = decoded;
  if (!alpha) return makeMask(image.batch, 64, 64);
  const out = allocFloats(alpha.length);
  for (let i = 0; i < alpha.length; i++) out[i] = 1 - alpha[i]!;
  return makeMask(image.batch, image.height, image.width, out);
}

/** Encodes one frame as PNG (compression level as ComfyUI's compress_level). */
export async function encodePng(image: ImageTensor, index: number, compressionLevel: number): Promise<Buffer> {
  refuse(pngProblem(image.width, image.height));
  return sharp(await frameToRgb8(image, index), { raw: { width: image.width, height: image.height, channels: 3 } })
    .png({ compressionLevel, palette: false })
    .toBuffer();
}

/** Encodes one frame as JPEG, optionally shrunk to fit a box (for previews). */
export async function encodeJpeg(image: ImageTensor, index: number, quality: number, maxSide?: number): Promise<Buffer> {
  let pipeline = sharp(await frameToRgb8(image, index), { raw: { width: image.width, height: image.height, channels: 3 } });
  if (maxSide && Math.max(image.width, image.height) > maxSide) {
    pipeline = pipeline.resize(maxSide, maxSide, { fit: "inside" });
  }
  return pipeline.jpeg({ quality }).toBuffer();
}

/** An encoder limit the frames break: invalid_input, before anything is allocated. */
function refuse(problem: string | null): void {
  if (problem) throw new NodeInputError(problem);
}

/** Options of SaveAnimatedWEBP. */
export interface AnimatedWebpOptions {
  fps: number;
  lossless: boolean;
  quality: number;
  /** libwebp method 0..6 (sharp's effort). */
  method: number;
}

/** Encodes the batch as an animated WebP, one frame per image, looping forever. */
export async function encodeAnimatedWebp(image: ImageTensor, options: AnimatedWebpOptions): Promise<Buffer> {
  refuse(webpProblem(image.width, image.height, image.batch, true));
  const delay = Math.min(65535, Math.trunc(1000 / options.fps));
  return sharp(await framesToRgb8(image, 0, image.batch), {
    raw: { width: image.width, height: image.height * image.batch, channels: 3, pageHeight: image.height },
  })
    .webp({
      lossless: options.lossless,
      quality: options.quality,
      effort: options.method,
      loop: 0,
      delay: new Array<number>(image.batch).fill(delay),
    })
    .toBuffer();
}

/** Encodes one frame as a lossy WebP (used to obtain VP8 key frames for video). */
export async function encodeLossyWebp(image: ImageTensor, index: number, quality: number): Promise<Buffer> {
  refuse(webpProblem(image.width, image.height, 1, false));
  return sharp(await frameToRgb8(image, index), { raw: { width: image.width, height: image.height, channels: 3 } })
    .webp({ quality, lossless: false, alphaQuality: 100 })
    .toBuffer();
}
