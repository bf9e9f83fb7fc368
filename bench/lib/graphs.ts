// Workflow graphs the bench submits, validates and runs.
import { randomUUID } from "node:crypto";
import type { NodeDefinition } from "../../src/engine/node-spec.ts";

type Graph = Record<string, { class_type: string; inputs: Record<string, unknown> }>;

/** The 3-node graph of the submit scenarios: PrimitiveString -> StringConcatenate -> PreviewAny. */
export function threeNodeGraph(value: string = `bench-${randomUUID()}`): Graph {
  return {
    "1": { class_type: "PrimitiveString", inputs: { value } },
    "2": { class_type: "StringConcatenate", inputs: { string_a: ["1", 0], string_b: "flowgate", delimiter: "-" } },
    "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
  };
}

/** POST /api/v2/jobs body whose graph value carries autocannon's `[<id>]` placeholder (a fresh id per request). */
export function threeNodeBodyTemplate(): string {
  return JSON.stringify({ workflow: threeNodeGraph("bench-[<id>]") });
}

/** EmptyImage (batch of 4) -> SaveImage: a job that finishes with 4 outputs. */
export function fourOutputGraph(): Graph {
  return {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 4, color: Math.floor(Math.random() * 0xffffff) } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "bench" } },
  };
}

/** A job that runs for `seconds` (cancellable): holds a slot so later submissions stay queued. */
export function blockingGraph(seconds: number): Graph {
  return {
    "1": { class_type: "PrimitiveString", inputs: { value: `block-${randomUUID()}` } },
    "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds } },
    "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
  };
}

/**
 * A valid graph of `groups * 10` nodes of the built-in library: per group an image chain
 * (EmptyImage, ImageInvert, ImageBlur, ImageFlip, ImageScaleBy, ImageBlend with the previous
 * group, SaveImage) and a text chain (PrimitiveString, StringConcatenate, PreviewAny).
 */
export function mixedGraph(groups: number): Graph {
  const g: Graph = {};
  let prevBlend: string | null = null;
  for (let i = 0; i < groups; i++) {
    const id = (k: number) => String(i * 10 + k);
    g[id(1)] = { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: i } };
    g[id(2)] = { class_type: "ImageInvert", inputs: { image: [id(1), 0] } };
    g[id(3)] = { class_type: "ImageBlur", inputs: { image: [id(2), 0], blur_radius: 1, sigma: 1.0 } };
    g[id(4)] = { class_type: "ImageFlip", inputs: { image: [id(3), 0], flip_method: "x-axis: vertically" } };
    g[id(5)] = { class_type: "ImageScaleBy", inputs: { image: [id(4), 0], upscale_method: "bilinear", scale_by: 1.0 } };
    g[id(6)] = { class_type: "ImageBlend", inputs: { image1: [id(5), 0], image2: [prevBlend ?? id(1), 0], blend_factor: 0.5, blend_mode: "normal" } };
    g[id(7)] = { class_type: "PrimitiveString", inputs: { value: `group ${i}` } };
    g[id(8)] = { class_type: "StringConcatenate", inputs: { string_a: [id(7), 0], string_b: "x", delimiter: "-" } };
    g[id(9)] = { class_type: "PreviewAny", inputs: { source: [id(8), 0] } };
    g[id(10)] = { class_type: "SaveImage", inputs: { images: [id(6), 0], filename_prefix: `bench/${i}` } };
    prevBlend = id(6);
  }
  return g;
}

// --- trivial nodes for the scheduling overhead -----------------------------------------------

function trivial(name: string, inputs: string[], outputs: string[], run: NodeDefinition["run"], outputNode = false): NodeDefinition {
  return {
    name,
    display_name: name,
    category: "bench",
    description: "",
    python_module: "bench",
    input: { required: Object.fromEntries(inputs.map((n) => [n, ["INT", {}] as const])) },
    output: outputs,
    output_node: outputNode,
    run,
  };
}

/** Trivial node classes: a source, a pass-through, a join of two, and an output sink. */
export const trivialNodes: readonly NodeDefinition[] = [
  trivial("BenchSource", ["seed"], ["INT"], (_c, i) => ({ result: [i.seed as number] })),
  trivial("BenchPass", ["a"], ["INT"], (_c, i) => ({ result: [(i.a as number) + 1] })),
  trivial("BenchJoin", ["a", "b"], ["INT"], (_c, i) => ({ result: [(i.a as number) + (i.b as number)] })),
  trivial("BenchSink", ["a"], [], () => ({ result: [] }), true),
];

/** A chain of `n` trivial nodes: source, n-2 pass-throughs, sink. */
export function chainGraph(n: number, seed: number): Graph {
  const g: Graph = { "0": { class_type: "BenchSource", inputs: { seed } } };
  for (let i = 1; i < n - 1; i++) g[String(i)] = { class_type: "BenchPass", inputs: { a: [String(i - 1), 0] } };
  g[String(n - 1)] = { class_type: "BenchSink", inputs: { a: [String(n - 2), 0] } };
  return g;
}

/** A binary reduction of about n/2 sources through joins into one sink: `n` nodes, wide then narrow. */
export function treeGraph(n: number, seed: number): Graph {
  const g: Graph = {};
  let next = 0;
  const add = (class_type: string, inputs: Record<string, unknown>) => {
    const id = String(next++);
    g[id] = { class_type, inputs };
    return id;
  };
  const sources = Math.floor(n / 2);
  let level = Array.from({ length: sources }, (_, i) => add("BenchSource", { seed: seed + i }));
  while (level.length > 1) {
    const up: string[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) up.push(add("BenchJoin", { a: [level[i]!, 0], b: [level[i + 1]!, 0] }));
    if (level.length % 2 === 1) up.push(level[level.length - 1]!);
    level = up;
  }
  add("BenchSink", { a: [level[0]!, 0] });
  while (next < n) add("BenchSink", { a: [String(0), 0] }); // pad to exactly n nodes
  return g;
}
