// `--input NAME=PATH`: which workflow input a file goes into.
//
// NAME is `NODE.INPUT` or `NODE`, where NODE is a node id or a node's `_meta.title`:
//   1. the whole NAME is tried as a node (its id first, then a title); it then addresses that
//      node's file input: the one input named image, audio, video or file it has;
//   2. otherwise NAME is split at its last dot into NODE and INPUT, and INPUT must be an input
//      the node already has in the graph.
// A title shared by several nodes is ambiguous and refused; use the node id.

/** The file inputs a bare NODE name addresses. */
export const FILE_INPUT_NAMES = ["image", "audio", "video", "file"] as const;

type Graph = Record<string, unknown>;

interface Node {
  class_type?: unknown;
  inputs?: Record<string, unknown>;
  _meta?: { title?: unknown };
}

/** The node and input a NAME addresses. */
export interface InputTarget {
  nodeId: string;
  input: string;
}

/** Splits `NAME=PATH` at the first `=`. */
export function parseInputFlag(text: string): { name: string; path: string } {
  const at = text.indexOf("=");
  if (at <= 0 || at === text.length - 1) throw new Error(`--input expects NAME=PATH, got "${text}"`);
  return { name: text.slice(0, at), path: text.slice(at + 1) };
}

/** Finds a node by id, then by a unique `_meta.title`; null when none matches. */
function findNode(graph: Graph, name: string): string | null {
  if (Object.hasOwn(graph, name) && isNode(graph[name])) return name;
  const titled = Object.entries(graph)
    .filter(([, n]) => isNode(n) && n._meta?.title === name)
    .map(([id]) => id);
  if (titled.length > 1) throw new Error(`the title "${name}" is shared by nodes ${titled.join(", ")}; use NODE_ID.INPUT`);
  return titled[0] ?? null;
}

function isNode(value: unknown): value is Node {
  return typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as Node).inputs === "object";
}

/** Resolves NAME to a node and input of the graph, or explains why it cannot. */
export function resolveInputTarget(graph: Graph, name: string): InputTarget {
  const whole = findNode(graph, name);
  if (whole !== null) {
    const inputs = Object.keys((graph[whole] as Node).inputs ?? {});
    const files = inputs.filter((i) => (FILE_INPUT_NAMES as readonly string[]).includes(i));
    if (files.length !== 1) {
      throw new Error(
        `node ${whole} has ${files.length === 0 ? "no" : "several"} file input (${FILE_INPUT_NAMES.join(", ")}); name one as ${name}.INPUT (inputs: ${inputs.join(", ")})`,
      );
    }
    return { nodeId: whole, input: files[0]! };
  }
  const dot = name.lastIndexOf(".");
  if (dot > 0 && dot < name.length - 1) {
    const nodeId = findNode(graph, name.slice(0, dot));
    const input = name.slice(dot + 1);
    if (nodeId !== null) {
      if (!Object.hasOwn((graph[nodeId] as Node).inputs ?? {}, input)) {
        throw new Error(`node ${nodeId} has no input "${input}" (inputs: ${Object.keys((graph[nodeId] as Node).inputs ?? {}).join(", ")})`);
      }
      return { nodeId, input };
    }
  }
  throw new Error(`"${name}" is neither a node id, a node title, nor NODE.INPUT of this workflow`);
}

/** A copy of the graph with `value` put in the addressed input. */
export function setInput(graph: Graph, target: InputTarget, value: unknown): Graph {
  const node = graph[target.nodeId] as Node;
  return { ...graph, [target.nodeId]: { ...node, inputs: { ...node.inputs, [target.input]: value } } };
}
