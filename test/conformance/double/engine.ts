// The double's engine: a handful of ComfyUI core and flowgate node classes with fake pixels,
// graph validation with per-node errors, and execution with progress, previews, logs and
// cancellation at node and step boundaries.
import { pngBytes } from "../../../conformance/checks/support/support.ts";

/** A fake IMAGE: only its size, batch and color matter. */
interface Image {
  kind: "image";
  w: number;
  h: number;
  batch: number;
  color: number;
}

/** A file a node writes. */
export interface FileOut {
  name: string;
  type: "image" | "text";
  contentType: string;
  bytes: Uint8Array;
  folder: "output" | "temp";
}

export interface RunCtx {
  signal: AbortSignal;
  progress(step: number, steps: number): void;
  preview(jpeg: Uint8Array): void;
  log(text: string): void;
  /** Resolves an asset reference to its bytes, or undefined. */
  asset(id: string): Uint8Array | undefined;
  /** The bytes of the job's caller's hosted upload of that name, or undefined. */
  upload(name: string): Uint8Array | undefined;
  samplerStepMs: number;
}

interface InputSpec {
  type: string;
  min?: number;
  max?: number;
  options?: string[];
}

interface NodeDef {
  inputs: Record<string, InputSpec>;
  outputs: string[];
  outputNode?: boolean;
  run(inputs: Record<string, unknown>, ctx: RunCtx): Promise<{ result?: unknown[]; files?: FileOut[] }>;
}

/** A tiny JPEG (the asyncapi example), for previews. */
export const JPEG = Buffer.from(
  "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/wAALCAABAAEBAREA/8QAFAABAAAAAAAAAAAAAAAAAAAACf/EABQQAQAAAAAAAAAAAAAAAAAAAAD/2gAIAQEAAD8AKp//2Q==",
  "base64",
);

/** A failure while running a node, with the job error code it maps to. */
export class NodeError extends Error {
  readonly nodeId: string;
  readonly classType: string;
  readonly code: "node_execution_error" | "invalid_input";

  constructor(nodeId: string, classType: string, message: string, code: NodeError["code"] = "node_execution_error") {
    super(message);
    this.nodeId = nodeId;
    this.classType = classType;
    this.code = code;
  }
}

/** Thrown by a node that rejects its inputs at run time (invalid_input, as flowgate's NodeInputError). */
class InputRejected extends Error {}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error("aborted"));
    const onAbort = () => {
      clearTimeout(t);
      reject(new Error("aborted"));
    };
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

let counter = 0;
const img = (v: unknown): Image => v as Image;
const saveImages = (images: Image, prefix: string, folder: "output" | "temp"): FileOut[] =>
  Array.from({ length: images.batch }, () => ({
    name: `${prefix}_${String(++counter).padStart(5, "0")}_.png`,
    type: "image" as const,
    contentType: "image/png",
    bytes: pngBytes(Math.min(images.w, 16), Math.min(images.h, 16), [images.color >> 16, (images.color >> 8) & 255, images.color & 255, 255]),
    folder,
  }));
const textFile = (text: string, folder: "output" | "temp"): FileOut => ({
  name: `text_${++counter}.txt`,
  type: "text",
  contentType: "text/plain; charset=utf-8",
  bytes: Buffer.from(text),
  folder,
});

/** The node classes the double knows. */
export const NODES: Record<string, NodeDef> = {
  EmptyImage: {
    inputs: {
      width: { type: "INT", min: 1, max: 16384 },
      height: { type: "INT", min: 1, max: 16384 },
      batch_size: { type: "INT", min: 1, max: 4096 },
      color: { type: "INT", min: 0, max: 0xffffff },
    },
    outputs: ["IMAGE"],
    async run(i) {
      return { result: [{ kind: "image", w: Number(i.width), h: Number(i.height), batch: Number(i.batch_size), color: Number(i.color) } satisfies Image] };
    },
  },
  ImageInvert: {
    inputs: { image: { type: "IMAGE" } },
    outputs: ["IMAGE"],
    async run(i) {
      const a = img(i.image);
      return { result: [{ ...a, color: 0xffffff - a.color }] };
    },
  },
  ImageBlend: {
    inputs: {
      image1: { type: "IMAGE" },
      image2: { type: "IMAGE" },
      blend_factor: { type: "FLOAT", min: 0, max: 1 },
      blend_mode: { type: "COMBO", options: ["normal", "multiply", "screen"] },
    },
    outputs: ["IMAGE"],
    async run(i) {
      const [a, b] = [img(i.image1), img(i.image2)];
      if (a.batch !== b.batch && a.batch !== 1 && b.batch !== 1) throw new Error(`Cannot blend batches of ${a.batch} and ${b.batch} images`);
      return { result: [a] };
    },
  },
  SaveImage: {
    inputs: { images: { type: "IMAGE" }, filename_prefix: { type: "STRING" } },
    outputs: [],
    outputNode: true,
    async run(i) {
      return { files: saveImages(img(i.images), String(i.filename_prefix), "output") };
    },
  },
  PreviewImage: {
    inputs: { images: { type: "IMAGE" } },
    outputs: [],
    outputNode: true,
    async run(i) {
      return { files: saveImages(img(i.images), "preview", "temp") };
    },
  },
  LoadImage: {
    inputs: { image: { type: "ASSET" } },
    outputs: ["IMAGE", "MASK"],
    async run(i, ctx) {
      // A hosted prompt names an upload (ComfyUI's way); its bytes must be an image (only PNG here).
      if (typeof i.image === "string") {
        const bytes = ctx.upload(i.image);
        if (!bytes || !PNG_SIGNATURE.equals(Buffer.from(bytes.subarray(0, 8)))) throw new InputRejected(`Invalid image file: ${i.image}`);
      } else if (!ctx.asset((i.image as { info: { id: string } }).info.id)) throw new Error("the asset went away");
      return { result: [{ kind: "image", w: 4, h: 4, batch: 1, color: 0x808080 } satisfies Image, null] };
    },
  },
  PrimitiveString: {
    inputs: { value: { type: "STRING" } },
    outputs: ["STRING"],
    async run(i) {
      return { result: [i.value] };
    },
  },
  StringConcatenate: {
    inputs: { string_a: { type: "STRING" }, string_b: { type: "STRING" }, delimiter: { type: "STRING" } },
    outputs: ["STRING"],
    async run(i) {
      return { result: [`${i.string_a}${i.delimiter}${i.string_b}`] };
    },
  },
  PreviewAny: {
    inputs: { source: { type: "*" } },
    outputs: ["STRING"],
    outputNode: true,
    async run(i) {
      const text = typeof i.source === "string" ? i.source : JSON.stringify(i.source);
      return { result: [text], files: [textFile(text, "temp")] };
    },
  },
  FlowgateDelay: {
    inputs: { value: { type: "*" }, seconds: { type: "FLOAT", min: 0, max: 3600 } },
    outputs: ["*"],
    async run(i, ctx) {
      await sleep(Number(i.seconds) * 1000, ctx.signal);
      return { result: [i.value] };
    },
  },
  FlowgateSampler: {
    inputs: { seed: { type: "INT", min: 0 }, steps: { type: "INT", min: 1, max: 10000 }, width: { type: "INT", min: 16 }, height: { type: "INT", min: 16 } },
    outputs: ["IMAGE", "LATENT"],
    async run(i, ctx) {
      const steps = Number(i.steps);
      for (let s = 1; s <= steps; s++) {
        await sleep(ctx.samplerStepMs, ctx.signal);
        ctx.preview(JPEG);
        ctx.progress(s, steps);
      }
      return {
        result: [{ kind: "image", w: Number(i.width), h: Number(i.height), batch: 1, color: Number(i.seed) & 0xffffff } satisfies Image, { samples: [] }],
      };
    },
  },
  FlowgatePrint: {
    inputs: { text: { type: "STRING" } },
    outputs: ["STRING"],
    outputNode: true,
    async run(i, ctx) {
      ctx.log(`${i.text}\n`);
      return { result: [i.text], files: [textFile(String(i.text), "temp")] };
    },
  },
};

/** object_info for the hosted interface, without the classes the surface lacks. */
export function objectInfo(missing: readonly string[] = []): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(NODES)
      .filter(([name]) => !missing.includes(name))
      .map(([name, d]) => [
        name,
        {
          input: { required: Object.fromEntries(Object.entries(d.inputs).map(([k, s]) => [k, s.options ? [s.options, {}] : [s.type, {}]])) },
          output: d.outputs,
          output_is_list: d.outputs.map(() => false),
          output_name: d.outputs,
          name,
          display_name: name,
          description: "",
          category: "conformance",
          output_node: !!d.outputNode,
        },
      ]),
  );
}

type Graph = Record<string, { class_type: string; inputs: Record<string, unknown> }>;
export type NodeErrors = Record<string, Array<{ field: string; reason: string }>>;

const isLink = (v: unknown): v is [string, number] => Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "number";
/** Whether an input value is a `core/ASSET` reference. */
export const isAssetRef = (v: unknown): v is { __type: string; info: { id: string } } =>
  !!v && typeof v === "object" && (v as { __type?: unknown }).__type === "core/ASSET";

/** Per-node errors of a graph (empty when valid); asset references are checked elsewhere. */
export function validateGraph(graph: Record<string, unknown>, missing: readonly string[] = []): NodeErrors {
  const errors: NodeErrors = {};
  const add = (id: string, field: string, reason: string) => (errors[id] ??= []).push({ field, reason });
  for (const [id, raw] of Object.entries(graph)) {
    const node = raw as { class_type?: unknown; inputs?: unknown };
    if (!node || typeof node !== "object" || typeof node.class_type !== "string" || !node.inputs || typeof node.inputs !== "object") {
      add(id, "", "bad_node");
      continue;
    }
    const def = missing.includes(node.class_type) ? undefined : NODES[node.class_type];
    if (!def) {
      add(id, "class_type", "unknown_class");
      continue;
    }
    const inputs = node.inputs as Record<string, unknown>;
    for (const [name, spec] of Object.entries(def.inputs)) {
      const v = inputs[name];
      if (v === undefined) add(id, name, "missing_input");
      else if (isLink(v)) {
        const src = graph[v[0]] as { class_type?: string } | undefined;
        const out = src?.class_type ? NODES[src.class_type]?.outputs[v[1]] : undefined;
        if (!src || !out) add(id, name, "bad_link");
        else if (spec.type !== "*" && out !== "*" && out !== spec.type) add(id, name, "type_mismatch");
      } else if (spec.type === "ASSET") {
        // A `core/ASSET` reference, or a hosted upload's name (looked up when the node runs, as flowgate does).
        if (!isAssetRef(v) && (typeof v !== "string" || v === "")) add(id, name, "type_mismatch");
      } else if (spec.type === "INT" || spec.type === "FLOAT") {
        if (typeof v !== "number") add(id, name, "type_mismatch");
        else if ((spec.min !== undefined && v < spec.min) || (spec.max !== undefined && v > spec.max)) add(id, name, "out_of_range");
      } else if (spec.type === "STRING" && typeof v !== "string") add(id, name, "type_mismatch");
      else if (spec.options && !spec.options.includes(String(v))) add(id, name, "not_in_options");
      else if (["IMAGE", "LATENT", "MASK"].includes(spec.type)) add(id, name, "type_mismatch");
    }
  }
  if (Object.keys(errors).length === 0 && !Object.values(graph).some((n) => NODES[(n as { class_type: string }).class_type]?.outputNode))
    add("", "", "no_output_node");
  return errors;
}

/** The nodes a run executes (output nodes and their ancestors), in dependency order. */
export function executionOrder(graph: Graph): string[] {
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (id: string) => {
    if (seen.has(id)) return;
    seen.add(id);
    for (const v of Object.values(graph[id]!.inputs)) if (isLink(v)) visit(v[0]);
    order.push(id);
  };
  for (const [id, n] of Object.entries(graph)) if (NODES[n.class_type]?.outputNode) visit(id);
  return order;
}

export interface ExecHooks {
  nodeStart(id: string, classType: string, index: number): void;
  nodeDone(id: string, classType: string, files: FileOut[]): Promise<void>;
}

/** Runs a validated graph; throws NodeError for a node failure and Error("aborted") on cancel. */
export async function execute(graph: Graph, ctx: RunCtx, hooks: ExecHooks): Promise<void> {
  const results = new Map<string, unknown[]>();
  const order = executionOrder(graph);
  for (const [index, id] of order.entries()) {
    if (ctx.signal.aborted) throw new Error("aborted");
    const node = graph[id]!;
    hooks.nodeStart(id, node.class_type, index);
    const inputs: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node.inputs)) inputs[k] = isLink(v) ? results.get(v[0])?.[v[1]] : v;
    let out: { result?: unknown[]; files?: FileOut[] };
    try {
      out = await NODES[node.class_type]!.run(inputs, ctx);
    } catch (e) {
      if (ctx.signal.aborted) throw new Error("aborted");
      throw new NodeError(id, node.class_type, (e as Error).message, e instanceof InputRejected ? "invalid_input" : "node_execution_error");
    }
    results.set(id, out.result ?? []);
    await hooks.nodeDone(id, node.class_type, out.files ?? []);
  }
}
