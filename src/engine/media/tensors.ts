// In-memory value shapes that flow along links, laid out like ComfyUI's torch tensors
// so that node code can be ported line by line. Every tensor's storage is allocated here
// (allocFloats, allocBytes), where it is charged to the running job's memory budget.
import { chargeAllocation, cooperate } from "../run-scope.ts";
import { fillPattern, floatsToRgb8 } from "./pixel-kernels.ts";
import { noteSharedAllocation } from "./shared-storage.ts";

/** IMAGE: batch x height x width x 3 floats in 0..1 (channels last, like ComfyUI). */
export interface ImageTensor {
  readonly kind: "IMAGE";
  readonly batch: number;
  readonly height: number;
  readonly width: number;
  readonly channels: 3;
  readonly data: Float32Array;
}

/** MASK: batch x height x width floats in 0..1. */
export interface MaskTensor {
  readonly kind: "MASK";
  readonly batch: number;
  readonly height: number;
  readonly width: number;
  readonly data: Float32Array;
}

/** A 4-d tensor in ComfyUI's latent layout: batch x channels x height x width. */
export interface LatentSamples {
  readonly shape: readonly [number, number, number, number];
  readonly data: Float32Array;
}

/** LATENT: a dict with `samples`, like ComfyUI. */
export interface Latent {
  readonly kind: "LATENT";
  readonly samples: LatentSamples;
}

/** AUDIO: waveform batch x channels x samples, plus the sample rate, like ComfyUI. */
export interface Audio {
  readonly kind: "AUDIO";
  readonly waveform: {
    readonly batch: number;
    readonly channels: number;
    readonly samples: number;
    readonly data: Float32Array;
  };
  readonly sample_rate: number;
}

/**
 * A zeroed float array, charged to the running job's budget before it is allocated. Its storage
 * is shared memory, so the pixel worker (pixel-kernels.ts) can work on it without a copy; the
 * engine frees it when dead (shared-storage.ts).
 */
export function allocFloats(length: number): Float32Array {
  chargeAllocation(length * 4);
  noteSharedAllocation(length * 4);
  return new Float32Array(new SharedArrayBuffer(length * 4));
}

/** A zeroed byte buffer, charged and shared like allocFloats. */
export function allocBytes(length: number): Buffer {
  chargeAllocation(length);
  noteSharedAllocation(length);
  return Buffer.from(new SharedArrayBuffer(length));
}

/** Values per slice of the bulk loops below: a few milliseconds of work between yields. */
const SLICE = 1 << 20;

/** Sets every value (the pixel worker does it for shared storage; a 1 GB fill would hold the event loop). */
export function fillFloats(data: Float32Array, value: number): Promise<void> {
  return fillPattern(data, Float32Array.of(value));
}

/** Copies src into dst at offset slice by slice, yielding between slices. */
export async function copyFloats(dst: Float32Array, src: Float32Array, offset = 0): Promise<void> {
  for (let at = 0; at < src.length; at += SLICE) {
    dst.set(src.subarray(at, Math.min(src.length, at + SLICE)), offset + at);
    await cooperate();
  }
}

/** Creates an image tensor, zero-filled unless data is given. */
export function makeImage(batch: number, height: number, width: number, data?: Float32Array): ImageTensor {
  const size = batch * height * width * 3;
  if (data && data.length !== size) throw new Error(`image data has ${data.length} values, expected ${size}`);
  return { kind: "IMAGE", batch, height, width, channels: 3, data: data ?? allocFloats(size) };
}

/** Creates a mask tensor, zero-filled unless data is given. */
export function makeMask(batch: number, height: number, width: number, data?: Float32Array): MaskTensor {
  const size = batch * height * width;
  if (data && data.length !== size) throw new Error(`mask data has ${data.length} values, expected ${size}`);
  return { kind: "MASK", batch, height, width, data: data ?? allocFloats(size) };
}

/** Creates a latent from a shape, zero-filled unless data is given. */
export function makeLatent(shape: readonly [number, number, number, number], data?: Float32Array): Latent {
  const size = shape[0] * shape[1] * shape[2] * shape[3];
  if (data && data.length !== size) throw new Error(`latent data has ${data.length} values, expected ${size}`);
  return { kind: "LATENT", samples: { shape, data: data ?? allocFloats(size) } };
}

/** Creates an audio value from a batch x channels x samples waveform. */
export function makeAudio(batch: number, channels: number, samples: number, sampleRate: number, data?: Float32Array): Audio {
  const size = batch * channels * samples;
  if (data && data.length !== size) throw new Error(`waveform has ${data.length} values, expected ${size}`);
  return {
    kind: "AUDIO",
    waveform: { batch, channels, samples, data: data ?? allocFloats(size) },
    sample_rate: sampleRate,
  };
}

/** True for an IMAGE value. */
export function isImage(v: unknown): v is ImageTensor {
  return typeof v === "object" && v !== null && (v as { kind?: unknown }).kind === "IMAGE";
}

/** True for a MASK value. */
export function isMask(v: unknown): v is MaskTensor {
  return typeof v === "object" && v !== null && (v as { kind?: unknown }).kind === "MASK";
}

/** True for a LATENT value. */
export function isLatent(v: unknown): v is Latent {
  return typeof v === "object" && v !== null && (v as { kind?: unknown }).kind === "LATENT";
}

/** True for an AUDIO value. */
export function isAudio(v: unknown): v is Audio {
  return typeof v === "object" && v !== null && (v as { kind?: unknown }).kind === "AUDIO";
}

/** One frame of an image batch as its own single-image tensor (a copy-free view). */
export function imageFrame(image: ImageTensor, index: number): ImageTensor {
  const frame = image.height * image.width * 3;
  return makeImage(1, image.height, image.width, image.data.subarray(index * frame, (index + 1) * frame));
}

/** Converts one frame to 8-bit RGB the way ComfyUI saves: clip(255 * x) truncated to uint8. */
export function frameToRgb8(image: ImageTensor, index: number): Promise<Buffer> {
  return framesToRgb8(image, index, 1);
}

/** Converts `count` frames from `first` into one buffer of stacked 8-bit RGB frames (on the pixel worker). */
export async function framesToRgb8(image: ImageTensor, first: number, count: number): Promise<Buffer> {
  const length = image.height * image.width * 3 * count;
  const out = allocBytes(length);
  await floatsToRgb8(image.data, first * image.height * image.width * 3, length, out);
  return out;
}

/** Builds a one-frame float image from 8-bit RGB bytes. */
export function rgb8ToFloat(bytes: Uint8Array, out: Float32Array, offset = 0): void {
  for (let i = 0; i < bytes.length; i++) out[offset + i] = (bytes[i] ?? 0) / 255;
}

/** Repeats or truncates a batch to `batch` items, like comfy.utils.repeat_to_batch_size. */
export async function repeatToBatch(data: Float32Array, itemSize: number, have: number, want: number): Promise<Float32Array> {
  if (have === want) return data;
  const out = allocFloats(itemSize * want);
  for (let b = 0; b < want; b++) await copyFloats(out, data.subarray((b % have) * itemSize, ((b % have) + 1) * itemSize), b * itemSize);
  return out;
}
