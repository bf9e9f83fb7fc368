// What the encoders can write, checked at validation (sizes known from the graph) and again by
// the encoders before they allocate anything. Every encoder hands sharp raw 8-bit frames.

/** sharp's limitInputPixels default (0x3FFF²), which also applies to raw input: width x height of one raw image. */
export const SHARP_PIXEL_LIMIT = 0x3fff ** 2;
/** sharp's bound on each side of a raw input. */
export const SHARP_RAW_SIDE_LIMIT = 100_000_000;
/** libwebp's WEBP_MAX_DIMENSION, per side (animated WebP frames and the video's VP8 frames). */
export const WEBP_MAX_SIDE = 16383;

/** Why a frame of this size cannot be written as PNG, or null. */
export function pngProblem(width: number, height: number): string | null {
  return rawProblem(width, height, "a PNG");
}

/** Why frames of this size cannot be written as WebP, or null; `stacked` when the whole batch is one raw input (animated WebP). */
export function webpProblem(width: number, height: number, frames: number, stacked: boolean): string | null {
  if (width > WEBP_MAX_SIDE || height > WEBP_MAX_SIDE) {
    return `${width}x${height} is larger than WebP allows (at most ${WEBP_MAX_SIDE} pixels a side)`;
  }
  return stacked ? rawProblem(width, height * frames, `${frames} WebP frames`) : rawProblem(width, height, "a WebP frame");
}

function rawProblem(width: number, height: number, what: string): string | null {
  if (width * height > SHARP_PIXEL_LIMIT || width > SHARP_RAW_SIDE_LIMIT || height > SHARP_RAW_SIDE_LIMIT) {
    return `${width}x${height} pixels cannot be encoded as ${what} (the encoder takes at most ${SHARP_PIXEL_LIMIT.toLocaleString("en-US")} pixels, 16383x16383)`;
  }
  return null;
}
