// Nodes of our own that make every event and output type real on a CPU:
// a seeded sampler with steps and previews, a delay, a print, and a text file writer.
import { createHash } from "node:crypto";
import { NodeInputError } from "../errors.ts";
import { encodeJpeg } from "../media/image-codec.ts";
import { allocFloats, makeImage, makeLatent, type ImageTensor } from "../media/tensors.ts";
import { floatInput, intInput, noCheckpoint, socket, stringInput, type Checkpoint, type NodeDefinition } from "../node-spec.ts";
import { cooperate } from "../run-scope.ts";
import { knownInt, numberInput, stringValue } from "./helpers.ts";
import { textFile } from "./text.ts";
import { ownUtf8 } from "../../domain/bytes.ts";
import { bigIntOf, exactInteger } from "../../domain/exact-json.ts";

const MODULE = "custom_nodes.flowgate";

/** xoshiro128** seeded from SHA-256 of the seed's decimal text (seeds go up to 2^64 - 1). */
export function seededRandom(seed: number | bigint): () => number {
  const exact = typeof seed === "bigint" ? seed : BigInt(Math.trunc(seed));
  const h = createHash("sha256").update(`flowgate:${exact.toString()}`).digest();
  let a = h.readUInt32LE(0);
  let b = h.readUInt32LE(4);
  let c = h.readUInt32LE(8);
  let d = h.readUInt32LE(12);
  if ((a | b | c | d) === 0) a = 1;
  return () => {
    const result = Math.imul(rotl(Math.imul(b, 5) >>> 0, 7), 9) >>> 0;
    const t = (b << 9) >>> 0;
    c = (c ^ a) >>> 0;
    d = (d ^ b) >>> 0;
    b = (b ^ c) >>> 0;
    a = (a ^ d) >>> 0;
    c = (c ^ t) >>> 0;
    d = rotl(d, 11);
    return result / 4294967296;
  };
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

interface Wave {
  fx: number;
  fy: number;
  phase: [number, number, number];
  amp: [number, number, number];
}

/** The seed's picture as a function of normalised coordinates: a sum of colored plane waves. */
function pictureOf(seed: number | bigint): (u: number, v: number, out: Float32Array, at: number) => void {
  const rand = seededRandom(seed);
  const waves: Wave[] = [];
  for (let k = 0; k < 5; k++) {
    waves.push({
      fx: (rand() - 0.5) * 12,
      fy: (rand() - 0.5) * 12,
      phase: [rand() * 2 * Math.PI, rand() * 2 * Math.PI, rand() * 2 * Math.PI],
      amp: [rand() * 0.25, rand() * 0.25, rand() * 0.25],
    });
  }
  return (u, v, out, at) => {
    for (let c = 0; c < 3; c++) {
      let value = 0.5;
      for (const w of waves) value += w.amp[c]! * Math.sin(2 * Math.PI * (w.fx * u + w.fy * v) + w.phase[c]!);
      out[at + c] = value < 0 ? 0 : Math.min(value, 1);
    }
  };
}

/** Renders the seed's picture at a size (the sampler's final image). */
export async function renderPicture(seed: number | bigint, width: number, height: number, checkpoint: Checkpoint = noCheckpoint): Promise<ImageTensor> {
  const paint = pictureOf(seed);
  const image = makeImage(1, height, width);
  for (let y = 0; y < height; y++) {
    await checkpoint();
    for (let x = 0; x < width; x++) paint((x + 0.5) / width, (y + 0.5) / height, image.data, (y * width + x) * 3);
  }
  return image;
}

/** The latent of an image: 8x8 block means of R, G, B and luminance (batch x 4 x h/8 x w/8). */
async function latentOf(image: ImageTensor) {
  const lh = Math.floor(image.height / 8);
  const lw = Math.floor(image.width / 8);
  const latent = makeLatent([1, 4, lh, lw]);
  const plane = lh * lw;
  for (let by = 0; by < lh; by++) {
    await cooperate();
    for (let bx = 0; bx < lw; bx++) {
      const sums = [0, 0, 0];
      for (let y = by * 8; y < by * 8 + 8; y++) {
        for (let x = bx * 8; x < bx * 8 + 8; x++) for (let c = 0; c < 3; c++) sums[c]! += image.data[(y * image.width + x) * 3 + c]!;
      }
      const [r, g, b] = sums.map((s) => s / 64) as [number, number, number];
      const at = by * lw + bx;
      latent.samples.data[at] = r;
      latent.samples.data[plane + at] = g;
      latent.samples.data[2 * plane + at] = b;
      latent.samples.data[3 * plane + at] = 0.299 * r + 0.587 * g + 0.114 * b;
    }
  }
  return latent;
}

const PREVIEW_SIDE = 128;

/** A seed input, exact beyond 2^53. */
function seedInput(inputs: Record<string, unknown>, name: string): bigint {
  const v = inputs[name];
  const exact = bigIntOf(v);
  if (exact !== null) return exact;
  return BigInt(Math.trunc(numberInput(inputs, name)));
}

/** FlowgateSampler: denoises seeded noise into the seed's picture, one progress event and preview per step. */
export const FlowgateSampler: NodeDefinition = {
  name: "FlowgateSampler",
  display_name: "Procedural Sampler (flowgate)",
  category: "flowgate/sampling",
  description: "A seeded procedural image generator with sampler-like steps and previews; no model needed.",
  python_module: MODULE,
  input: {
    required: {
      // 2^64 - 1 exactly, as ComfyUI's seeds (a double would round it up to 2^64).
      seed: intInput({ default: 0, min: 0, max: exactInteger(2n ** 64n - 1n), control_after_generate: true }),
      steps: intInput({ default: 20, min: 1, max: 10000 }),
      width: intInput({ default: 512, min: 16, max: 4096, step: 8 }),
      height: intInput({ default: 512, min: 16, max: 4096, step: 8 }),
    },
  },
  output: ["IMAGE", "LATENT"],
  output_name: ["IMAGE", "LATENT"],
  output_node: false,
  stepsInput: "steps",
  shapes: (l) => {
    const [width, height] = [knownInt(l.width), knownInt(l.height)];
    if (!width || !height) return [undefined, undefined];
    return [
      { kind: "IMAGE", batch: 1, height, width },
      { kind: "LATENT", dims: [1, 4, Math.floor(height / 8), Math.floor(width / 8)] },
    ];
  },
  async run(ctx, inputs) {
    const seed = seedInput(inputs, "seed");
    const steps = numberInput(inputs, "steps");
    const width = numberInput(inputs, "width");
    const height = numberInput(inputs, "height");
    // Previews are small, as ComfyUI's latent previews are.
    const scale = Math.min(1, PREVIEW_SIDE / Math.max(width, height));
    const pw = Math.max(1, Math.round(width * scale));
    const ph = Math.max(1, Math.round(height * scale));
    const target = await renderPicture(seed, pw, ph, ctx.checkpoint);
    const rand = seededRandom(seed + 1n);
    const noise = allocFloats(target.data.length);
    for (let i = 0; i < noise.length; i++) noise[i] = rand();
    const current = makeImage(1, ph, pw);
    for (let step = 1; step <= steps; step++) {
      ctx.throwIfAborted();
      const a = step / steps;
      for (let i = 0; i < current.data.length; i++) current.data[i] = a * target.data[i]! + (1 - a) * noise[i]!;
      ctx.preview(await encodeJpeg(current, 0, 80));
      ctx.progress(step, steps);
    }
    ctx.throwIfAborted();
    const image = await renderPicture(seed, width, height, ctx.checkpoint);
    return { result: [image, await latentOf(image)] };
  },
};

/** FlowgateDelay: passes any value on after `seconds`; cancellable while waiting. */
export const FlowgateDelay: NodeDefinition = {
  name: "FlowgateDelay",
  display_name: "Delay (flowgate)",
  category: "flowgate/utils",
  description: "Passes its input through after a delay, as a node waiting on I/O would.",
  python_module: MODULE,
  input: {
    required: {
      value: socket("*", {}),
      seconds: floatInput({ default: 1.0, min: 0.0, max: 3600.0, step: 0.01 }),
    },
  },
  output: ["*"],
  output_name: ["value"],
  output_node: false,
  shapes: (_l, inputs) => [inputs.value],
  async run(ctx, inputs) {
    await ctx.sleep(numberInput(inputs, "seconds") * 1000);
    return { result: [inputs.value] };
  },
};

/** FlowgatePrint: writes its text to standard output and passes it on; a text output. */
export const FlowgatePrint: NodeDefinition = {
  name: "FlowgatePrint",
  display_name: "Print (flowgate)",
  category: "flowgate/utils",
  description: "Writes its text to the run's standard output and passes it through.",
  python_module: MODULE,
  input: { required: { text: stringInput({ multiline: true, default: "" }) } },
  output: ["STRING"],
  output_node: true,
  run(ctx, inputs) {
    const text = stringValue(inputs, "text");
    ctx.log(`${text}\n`);
    return { result: [text], ui: { text: [text] }, files: [textFile(text, "flowgate/print", "temp")] };
  },
};

const FILE_TYPES: Record<string, string> = {
  txt: "text/plain; charset=utf-8",
  md: "text/markdown; charset=utf-8",
  csv: "text/csv; charset=utf-8",
  json: "application/json",
  html: "text/html; charset=utf-8",
  xml: "application/xml",
  yaml: "application/yaml",
  yml: "application/yaml",
  svg: "image/svg+xml",
};

/** Media type of a text file by its extension (application/octet-stream when unknown). */
export function contentTypeForExtension(extension: string): string {
  return FILE_TYPES[extension.toLowerCase()] ?? "application/octet-stream";
}

/** FlowgateSaveFile: writes text as a file with the given extension; a file output. */
export const FlowgateSaveFile: NodeDefinition = {
  name: "FlowgateSaveFile",
  display_name: "Save Text File (flowgate)",
  category: "flowgate/io",
  description: "Writes text to a file with the given extension.",
  python_module: MODULE,
  input: {
    required: {
      text: stringInput({ multiline: true, default: "" }),
      filename_prefix: stringInput({ default: "flowgate/file" }),
      extension: stringInput({ default: "txt" }),
    },
  },
  output: [],
  output_node: true,
  run(_ctx, inputs) {
    const extension = stringValue(inputs, "extension", "txt").replace(/^\./, "");
    if (!/^[A-Za-z0-9]{1,16}$/.test(extension)) throw new NodeInputError(`Invalid file extension: ${extension}`);
    return {
      ui: {},
      files: [
        {
          prefix: stringValue(inputs, "filename_prefix", "flowgate/file"),
          extension,
          uiKey: "files",
          type: "file",
          content_type: contentTypeForExtension(extension),
          data: ownUtf8(stringValue(inputs, "text")),
          folder: "output",
        },
      ],
    };
  },
};

/** The flowgate utility family. */
export const flowgateNodes: readonly NodeDefinition[] = [FlowgateSampler, FlowgateDelay, FlowgatePrint, FlowgateSaveFile];
