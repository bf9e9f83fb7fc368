// ComfyUI's ImageBlur and ImageSharpen kernels on typed arrays. Its Gaussian is sampled on
// linspace(-1, 1, 2r+1), not in pixel units, so sharp's blur would give different pixels.
import { noCheckpoint, type Checkpoint } from "../node-spec.ts";
import { chargeAllocation } from "../run-scope.ts";
import { allocFloats, makeImage, type ImageTensor } from "./tensors.ts";

/** 1-d factor of ComfyUI's gaussian_kernel(2r+1, sigma), normalised to sum 1. */
export function gaussianTaps(radius: number, sigma: number): Float64Array {
  const size = 2 * radius + 1;
  const taps = new Float64Array(size);
  let sum = 0;
  for (let i = 0; i < size; i++) {
    const x = size === 1 ? -1 : -1 + (2 * i) / (size - 1);
    taps[i] = Math.exp(-(x * x) / (2 * sigma * sigma));
    sum += taps[i]!;
  }
  // The 2-d kernel exp(-(x²+y²)/2σ²)/Σ is the outer product of this normalised 1-d kernel.
  for (let i = 0; i < size; i++) taps[i] = taps[i]! / sum;
  return taps;
}

/** Index into [0, n) with torch's 'reflect' padding (edge not repeated). */
function reflect(i: number, n: number): number {
  if (n === 1) return 0;
  const period = 2 * (n - 1);
  let k = ((i % period) + period) % period;
  if (k >= n) k = period - k;
  return k;
}

/** Gaussian blur of every frame with reflect padding, as ImageBlur does. */
export async function gaussianBlur(image: ImageTensor, radius: number, sigma: number, checkpoint: Checkpoint = noCheckpoint): Promise<ImageTensor> {
  const { batch, height: h, width: w } = image;
  const taps = gaussianTaps(radius, sigma);
  const out = allocFloats(image.data.length);
  chargeAllocation(h * w * 3 * 8);
  const tmp = new Float64Array(h * w * 3);
  for (let b = 0; b < batch; b++) {
    const base = b * h * w * 3;
    for (let y = 0; y < h; y++) {
      await checkpoint();
      for (let x = 0; x < w; x++) {
        for (let c = 0; c < 3; c++) {
          let acc = 0;
          for (let k = -radius; k <= radius; k++) acc += taps[k + radius]! * image.data[base + (y * w + reflect(x + k, w)) * 3 + c]!;
          tmp[(y * w + x) * 3 + c] = acc;
        }
      }
    }
    for (let y = 0; y < h; y++) {
      await checkpoint();
      for (let x = 0; x < w; x++) {
        for (let c = 0; c < 3; c++) {
          let acc = 0;
          for (let k = -radius; k <= radius; k++) acc += taps[k + radius]! * tmp[(reflect(y + k, h) * w + x) * 3 + c]!;
          out[base + (y * w + x) * 3 + c] = acc;
        }
      }
    }
  }
  return makeImage(batch, h, w, out);
}

/** ImageSharpen: kernel = -10α·G with the centre raised so it sums to 1, then clamp to 0..1. */
export async function sharpen(image: ImageTensor, radius: number, sigma: number, alpha: number, checkpoint: Checkpoint = noCheckpoint): Promise<ImageTensor> {
  const blurred = await gaussianBlur(image, radius, sigma, checkpoint);
  const a = 10 * alpha;
  const out = allocFloats(image.data.length);
  for (let i = 0; i < out.length; i++) {
    if ((i & 0xfffff) === 0) await checkpoint();
    // Σ K = 1 gives (1 + a)·I − a·(G * I).
    const v = (1 + a) * image.data[i]! - a * blurred.data[i]!;
    out[i] = v < 0 ? 0 : Math.min(v, 1);
  }
  return makeImage(image.batch, image.height, image.width, out);
}
