// The graphs the suite submits. Only ComfyUI core nodes that need no model weights, so that they
// run on any surface with a standard node set; slow and stepped work uses the flowgate nodes by
// default (FlowgateDelay, FlowgateSampler, FlowgatePrint) or graphs given on the command line.
// Each graph carries a random value so that no engine serves it from a result cache.
import { readFileSync } from "node:fs";

/** One node of an API-format graph. */
export interface GraphNode {
  class_type: string;
  inputs: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

/** An API-format graph, keyed by node id. */
export type Graph = Record<string, GraphNode>;

/** A random integer that makes a graph's signature unique. */
export function nonce(max = 0xffffff): number {
  return Math.floor(Math.random() * max);
}

/** EmptyImage -> SaveImage: the smallest graph with an image output. */
export function simpleGraph(): Graph {
  return {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: nonce() } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "conformance" } },
  };
}

/** An image output and a text output (SaveImage and PreviewAny), with literal and link inputs. */
export function mixedGraph(): Graph {
  return {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: nonce() } },
    "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
    "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "conformance" } },
    "4": { class_type: "PrimitiveString", inputs: { value: `conformance ${nonce()}` } },
    "5": { class_type: "PreviewAny", inputs: { source: ["4", 0] } },
  };
}

/** EmptyImage -> FlowgateDelay(seconds) -> SaveImage. */
export function defaultSlowGraph(seconds: number): Graph {
  return {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: nonce() } },
    "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds } },
    "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "conformance_slow" } },
  };
}

/** FlowgateSampler (per-step progress and previews) -> SaveImage. */
export function defaultStepsGraph(): Graph {
  return {
    "1": { class_type: "FlowgateSampler", inputs: { seed: nonce(), steps: 40, width: 64, height: 64 } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "conformance_steps" } },
  };
}

/** Blending a batch of 2 with a batch of 3: valid inputs that fail while running. */
export function defaultFailingGraph(): Graph {
  return {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 2, color: nonce() } },
    "2": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 3, color: 0 } },
    "3": { class_type: "ImageBlend", inputs: { image1: ["1", 0], image2: ["2", 0], blend_factor: 0.5, blend_mode: "normal" } },
    "4": { class_type: "SaveImage", inputs: { images: ["3", 0], filename_prefix: "conformance_fail" } },
  };
}

/** Two FlowgatePrint nodes in a chain: writes `first` then `first second` to standard output. */
export function printGraph(first: string): Graph {
  return {
    "1": { class_type: "FlowgatePrint", inputs: { text: first } },
    "2": { class_type: "StringConcatenate", inputs: { string_a: ["1", 0], string_b: "second", delimiter: " " } },
    "3": { class_type: "FlowgatePrint", inputs: { text: ["2", 0] } },
  };
}

/** A SaveImage without its required `images` input. */
export function missingInputGraph(): Graph {
  return {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
    "2": { class_type: "SaveImage", inputs: { filename_prefix: "conformance" } },
  };
}

/** A node whose class no engine has. */
export function unknownClassGraph(): Graph {
  return {
    "1": { class_type: "ConformanceNoSuchNode", inputs: {} },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "conformance" } },
  };
}

/** A link to a node that is not in the graph. */
export function danglingLinkGraph(): Graph {
  return { "2": { class_type: "SaveImage", inputs: { images: ["99", 0], filename_prefix: "conformance" } } };
}

/** LoadImage of a `core/ASSET` reference -> SaveImage. */
export function assetGraph(assetId: string): Graph {
  return {
    "1": { class_type: "LoadImage", inputs: { image: { __type: "core/ASSET", info: { id: assetId } } } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "conformance_asset" } },
  };
}

/** LoadImage of a hosted upload, by the name `POST /api/upload/image` gave it (ComfyUI's way) -> SaveImage. */
export function uploadGraph(name: string): Graph {
  return {
    "1": { class_type: "LoadImage", inputs: { image: name } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "conformance_upload" } },
  };
}

/** A UI export (top-level `nodes` and `links`), which v2 rejects. */
export function uiExport(): Record<string, unknown> {
  return {
    last_node_id: 2,
    last_link_id: 1,
    nodes: [
      { id: 1, type: "EmptyImage", pos: [0, 0], size: [200, 100], widgets_values: [8, 8, 1, 0], outputs: [{ name: "IMAGE", type: "IMAGE", links: [1] }] },
      { id: 2, type: "SaveImage", pos: [300, 0], size: [200, 100], widgets_values: ["conformance"], inputs: [{ name: "images", type: "IMAGE", link: 1 }] },
    ],
    links: [[1, 1, 0, 2, 0, "IMAGE"]],
    groups: [],
    config: {},
    extra: {},
    version: 0.4,
  };
}

/** A copy of a graph with every node id prefixed (links follow), to put two copies in one graph. */
export function prefixIds(graph: Graph, prefix: string): Graph {
  const out: Graph = {};
  for (const [id, node] of Object.entries(graph)) {
    const inputs: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node.inputs)) {
      inputs[k] = Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "number" ? [`${prefix}${v[0]}`, v[1]] : v;
    }
    out[`${prefix}${id}`] = { ...node, inputs };
  }
  return out;
}

/** The node classes a graph uses. */
export function classesOf(graph: Graph): string[] {
  return [...new Set(Object.values(graph).map((n) => n.class_type))];
}

/**
 * Puts one fresh random value in place of `$NONCE` (for graphs from files): a value that is
 * `"$NONCE"` alone becomes the number, and inside longer strings its digits. Below 2^24, so that
 * it fits an EmptyImage's color as well as any seed.
 */
export function withNonce(graph: Graph): Graph {
  const n = String(nonce());
  return JSON.parse(JSON.stringify(graph).replaceAll('"$NONCE"', n).replaceAll("$NONCE", n)) as Graph;
}

/** Reads a graph file: an API-format graph, or an object carrying one in `workflow` or `prompt`. */
export function loadGraph(file: string): Graph {
  const doc = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  const graph = (doc.workflow ?? doc.prompt ?? doc) as Graph;
  if (!graph || typeof graph !== "object" || Array.isArray(graph)) throw new Error(`${file}: not an API-format graph`);
  return graph;
}
