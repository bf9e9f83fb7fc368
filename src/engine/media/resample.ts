// Port of comfy.utils.common_upscale for channels-last float data: torch's
// interpolate modes computed on typed arrays, and lanczos through sharp (ComfyUI uses PIL there).
import sharp from "sharp";
import { noCheckpoint, type Checkpoint } from "../node-spec.ts";
import { cooperate } from "../run-scope.ts";
import { allocBytes, allocFloats } from "./tensors.ts";

/** ComfyUI's upscale method names. */
export const UPSCALE_METHODS = ["nearest-exact", "bilinear", "area", "bicubic", "lanczos"] as const;
export type UpscaleMethod = (typeof UPSCALE_METHODS)[number];

/** Channels-last float pixels: batch x height x width x channels. */
export interface Planes {
  batch: number;
  height: number;
  width: number;
  channels: number;
  data: Float32Array;
}

/** Resizes like common_upscale(samples, width, height, method, crop). */
export async function commonUpscale(
  src: Planes,
  width: number,
  height: number,
  method: UpscaleMethod,
  crop: "disabled" | "center",
  checkpoint: Checkpoint = noCheckpoint,
): Promise<Planes> {
  const cropped = crop === "center" ? centerCrop(src, width, height) : src;
  if (method === "lanczos") return lanczos(cropped, width, height);
  return resize(cropped, width, height, method, checkpoint);
}

/** Resize for every method but lanczos, pausing at each row. */
export async function resize(
  src: Planes,
  width: number,
  height: number,
  method: Exclude<UpscaleMethod, "lanczos">,
  checkpoint: Checkpoint = noCheckpoint,
): Promise<Planes> {
  const out = allocFloats(src.batch * height * width * src.channels);
  const rows = axisWeights(src.height, height, method);
  const cols = axisWeights(src.width, width, method);
  const c = src.channels;
  const tmp = allocFloats(src.height * width * c);
  for (let b = 0; b < src.batch; b++) {
    const inBase = b * src.height * src.width * c;
    // Separable: columns first into tmp, then rows into out.
    for (let y = 0; y < src.height; y++) {
      await checkpoint();
      for (let x = 0; x < width; x++) {
        const w = cols[x]!;
        for (let ch = 0; ch < c; ch++) {
          let acc = 0;
          for (let k = 0; k < w.index.length; k++) acc += w.weight[k]! * src.data[inBase + (y * src.width + w.index[k]!) * c + ch]!;
          tmp[(y * width + x) * c + ch] = acc;
        }
      }
    }
    const outBase = b * height * width * c;
    for (let y = 0; y < height; y++) {
      await checkpoint();
      const w = rows[y]!;
      for (let x = 0; x < width; x++) {
        for (let ch = 0; ch < c; ch++) {
          let acc = 0;
          for (let k = 0; k < w.index.length; k++) acc += w.weight[k]! * tmp[(w.index[k]! * width + x) * c + ch]!;
          out[outBase + (y * width + x) * c + ch] = acc;
        }
      }
    }
  }
  return { batch: src.batch, height, width, channels: c, data: out };
}

interface Taps {
  index: number[];
  weight: number[];
}

/** Per-output-pixel source taps along one axis, matching torch.nn.functional.interpolate. */
function axisWeights(inSize: number, outSize: number, method: Exclude<UpscaleMethod, "lanczos">): Taps[] {
  const scale = inSize / outSize;
  const taps: Taps[] = [];
  for (let o = 0; o < outSize; o++) {
    if (method === "nearest-exact") {
      taps.push({ index: [Math.min(Math.floor((o + 0.5) * scale), inSize - 1)], weight: [1] });
    } else if (method === "bilinear") {
      const s = Math.max(scale * (o + 0.5) - 0.5, 0);
      const i0 = Math.min(Math.floor(s), inSize - 1);
      const i1 = Math.min(i0 + 1, inSize - 1);
      const l = s - i0;
      taps.push({ index: [i0, i1], weight: [1 - l, l] });
    } else if (method === "bicubic") {
      const s = scale * (o + 0.5) - 0.5;
      const i = Math.floor(s);
      const t = s - i;
      const w = cubicWeights(t);
      taps.push({ index: [i - 1, i, i + 1, i + 2].map((k) => Math.min(Math.max(k, 0), inSize - 1)), weight: w });
    } else {
      // "area" is adaptive average pooling.
      const start = Math.floor((o * inSize) / outSize);
      const end = Math.ceil(((o + 1) * inSize) / outSize);
      const n = end - start;
      taps.push({ index: range(start, end), weight: new Array<number>(n).fill(1 / n) });
    }
  }
  return taps;
}

/** torch's cubic convolution weights with A = -0.75. */
function cubicWeights(t: number): number[] {
  const A = -0.75;
  const near = (x: number) => ((A + 2) * x - (A + 3)) * x * x + 1;
  const far = (x: number) => ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return [far(t + 1), near(t), near(1 - t), far(2 - t)];
}

function range(start: number, end: number): number[] {
  const out: number[] = [];
  for (let i = start; i < end; i++) out.push(i);
  return out;
}

/** The crop="center" step of common_upscale: keep the target aspect ratio. */
export function centerCrop(src: Planes, width: number, height: number): Planes {
  const oldW = src.width;
  const oldH = src.height;
  const oldAspect = oldW / oldH;
  const newAspect = width / height;
  let x = 0;
  let y = 0;
  if (oldAspect > newAspect) x = pyRoundHalfEven((oldW - oldW * (newAspect / oldAspect)) / 2);
  else if (oldAspect < newAspect) y = pyRoundHalfEven((oldH - oldH * (oldAspect / newAspect)) / 2);
  if (x === 0 && y === 0) return src;
  if (oldW - 2 * x < 1 || oldH - 2 * y < 1) throw new RangeError(`center crop of ${oldW}x${oldH} to aspect ${width}:${height} leaves nothing`);
  return cropPlanes(src, x, y, oldW - 2 * x, oldH - 2 * y);
}

/** Copies a rectangle out of every batch item. */
export function cropPlanes(src: Planes, x: number, y: number, width: number, height: number): Planes {
  const c = src.channels;
  const out = allocFloats(src.batch * width * height * c);
  for (let b = 0; b < src.batch; b++) {
    for (let row = 0; row < height; row++) {
      const from = ((b * src.height + y + row) * src.width + x) * c;
      out.set(src.data.subarray(from, from + width * c), (b * height + row) * width * c);
    }
  }
  return { batch: src.batch, height, width, channels: c, data: out };
}

/** Python's round(): half to even. */
export function pyRoundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Lanczos through sharp on 8-bit data, as ComfyUI goes through PIL on uint8 for this method. */
async function lanczos(src: Planes, width: number, height: number): Promise<Planes> {
  const c = src.channels;
  const out = allocFloats(src.batch * width * height * c);
  const frameIn = src.height * src.width * c;
  for (let b = 0; b < src.batch; b++) {
    const bytes = allocBytes(frameIn);
    for (let i = 0; i < frameIn; i++) {
      if ((i & 0xfffff) === 0) await cooperate();
      const v = Math.round(255 * (src.data[b * frameIn + i] ?? 0));
      bytes[i] = v < 0 ? 0 : Math.min(v, 255);
    }
    const resized = await sharp(bytes, { raw: { width: src.width, height: src.height, channels: c as 1 | 2 | 3 | 4 } })
      .resize(width, height, { fit: "fill", kernel: "lanczos3" })
      .raw()
      .toBuffer();
    const base = b * width * height * c;
    for (let i = 0; i < resized.length; i++) {
      if ((i & 0xfffff) === 0) await cooperate();
      out[base + i] = resized[i]! / 255;
    }
  }
  return { batch: src.batch, height, width, channels: c, data: out };
}
