// Graph validation with ComfyUI's rules. One pass yields every error, each in two shapes:
// flowgate's {field, reason} and ComfyUI's native error item.
//
// Conventions:
// - Graph-level errors (no output node, a graph that is not an object) are keyed by node id "".
// - `field` is the input name, "class_type", or "" for the node as a whole.
// - As in ComfyUI, structure and class names are checked on every node, inputs only on output
//   nodes and their ancestors (a dangling node never runs, so its inputs do not matter).
// - Unlike ComfyUI, which queues the outputs that did validate, any error fails the graph.
// - Every error carries a sentence for people (`message`), with "did you mean" where a name is a
//   likely typo; where there is such a hint, ComfyUI's item carries it as `extra_info.hint`.
import { parseAssetRef, isAssetObject, type AssetRef } from "./asset-refs.ts";
import { comfyError, typeText, type ComfyErrorItem, type ComfyNodeErrors, type ComfyValidationError } from "./comfy-errors.ts";
import { compareNodeIds, isPlainObject, readLink } from "./graph.ts";
import { prefixProblem } from "./filenames.ts";
import {
  comboOptions,
  declaredInputs,
  findInput,
  shapeBytes,
  type InputSpec,
  type InputType,
  type NodeDefinition,
  type TensorShape,
} from "./node-spec.ts";
import type { NodeRegistry } from "./nodes/registry.ts";
import { bigIntOf, exactInteger, isBigInteger, type RawJson } from "../domain/exact-json.ts";
import { pyBool, pyFloat, pyFloatRepr, pyInt, pyRepr, pyStr } from "./python.ts";
import { formatBytes } from "./run-scope.ts";
import { closest } from "./suggest.ts";

/** flowgate's validation reasons (docs/decisions.md, "Graph validation"). */
export type ValidationReason =
  | "missing_input"
  | "unknown_class"
  | "bad_link"
  | "type_mismatch"
  | "out_of_range"
  | "not_in_options"
  | "cycle"
  | "no_output_node"
  | "bad_node";

/** One problem with one field of one node. */
export interface FieldError {
  field: string;
  reason: ValidationReason;
  /** What is wrong, for people: with "did you mean" where a name looks mistyped. */
  message?: string;
}

/** The outcome of validate(): both error shapes, and the output nodes found. */
export interface ValidationResult {
  valid: boolean;
  /** node id ("" for the graph as a whole) -> its errors. Empty when valid. */
  node_errors: Record<string, FieldError[]>;
  /** ComfyUI's POST /prompt error body, or null when valid. */
  comfy: ComfyValidationError | null;
  /** Ids of the output nodes that would run. */
  output_nodes: string[];
}

/** A file input as written in the graph. */
export type FileRef = { kind: "upload"; name: string } | { kind: "asset"; ref: AssetRef };

/** A node ready to run: coerced literals, links and file references. */
export interface PreparedNode {
  id: string;
  class_type: string;
  def: NodeDefinition;
  literals: Record<string, unknown>;
  links: Record<string, { from: string; index: number }>;
  files: Record<string, FileRef>;
}

/** One validation finding in both shapes. */
export interface Issue {
  node_id: string;
  field: string;
  reason: ValidationReason;
  comfy: ComfyErrorItem;
  message: string;
}

/** Everything validation learns about a graph. */
export interface Analysis {
  issues: Issue[];
  outputs: string[];
  nodes: Map<string, PreparedNode>;
  /** Output nodes and their ancestors, dependencies first; empty when there is a cycle. */
  order: string[];
  /** node id -> the output nodes that depend on it. */
  dependents: Map<string, string[]>;
  classTypes: Map<string, string | null>;
}

/** ComfyUI's validate_node_input: equal types, "*" on either side, or overlapping "A,B" unions. */
export function typesCompatible(received: string, expected: InputType): boolean {
  if (received === expected) return true;
  if (typeof expected !== "string") return false;
  const r = new Set(received.split(",").map((t) => t.trim()));
  const e = new Set(expected.split(",").map((t) => t.trim()));
  if (r.has("*") || e.has("*")) return true;
  for (const t of r) if (e.has(t)) return true;
  return false;
}

/** Longest `filename_prefix` a node may be given. */
export const MAX_FILENAME_PREFIX = 255;

const WIDGET_TYPES = new Set(["INT", "FLOAT", "STRING", "BOOLEAN"]);

/** What validation checks beyond the graph itself. */
export interface AnalyzeOptions {
  /** The per-run memory budget: a node whose known tensor sizes exceed it is out_of_range. */
  jobMemoryBytes?: number;
}

/** Analyses a graph against a node registry. */
export function analyzeGraph(graph: unknown, registry: NodeRegistry, options: AnalyzeOptions = {}): Analysis {
  const analysis: Analysis = { issues: [], outputs: [], nodes: new Map(), order: [], dependents: new Map(), classTypes: new Map() };
  const issue: Report = (node_id, field, reason, comfy, message, hint) =>
    analysis.issues.push({ node_id, field, reason, comfy: hint ? withHint(comfy, hint) : comfy, message: hint ? `${message} ${hint}` : message });
  if (!isPlainObject(graph)) {
    issue("", "", "bad_node", comfyError.invalidPrompt("The workflow must be a JSON object keyed by node id"), "The workflow must be a JSON object keyed by node id.");
    return analysis;
  }
  const known = new Map<string, { def: NodeDefinition; inputs: Record<string, unknown> }>();
  for (const [id, node] of Object.entries(graph)) {
    const title = isPlainObject(node) && isPlainObject(node._meta) && typeof node._meta.title === "string" ? node._meta.title : undefined;
    if (!isPlainObject(node) || typeof node.class_type !== "string") {
      analysis.classTypes.set(id, null);
      issue(id, "class_type", "bad_node", comfyError.missingClassType(id, title), `Node ${id} has no class_type: every node names its node class.`);
      continue;
    }
    analysis.classTypes.set(id, node.class_type);
    const def = registry.get(node.class_type);
    if (!def) {
      const near = closest(node.class_type, registry.keys());
      issue(
        id,
        "class_type",
        "unknown_class",
        comfyError.missingNodeType(id, node.class_type, title),
        near ? `This server has no node class "${node.class_type}".` : `This server has no node class "${node.class_type}"; GET /api/object_info lists the classes it has.`,
        near ? `Did you mean "${near}"?` : undefined,
      );
      continue;
    }
    if (node.inputs !== undefined && !isPlainObject(node.inputs)) {
      issue(id, "", "bad_node", comfyError.exceptionDuringValidation("TypeError", "inputs must be an object of input name to value"), "The node's inputs must be an object of input name to value.");
      continue;
    }
    known.set(id, { def, inputs: (node.inputs as Record<string, unknown> | undefined) ?? {} });
    if (def.output_node) analysis.outputs.push(id);
  }
  analysis.outputs.sort(compareNodeIds);
  if (analysis.outputs.length === 0) {
    issue("", "", "no_output_node", comfyError.promptNoOutputs(), "The workflow has no output node (such as SaveImage or PreviewAny), so nothing would run.");
    return analysis;
  }

  // Walk from the outputs to their ancestors, checking each node's inputs once.
  const pending = [...analysis.outputs];
  while (pending.length > 0) {
    const id = pending.pop()!;
    if (analysis.nodes.has(id)) continue;
    const entry = known.get(id);
    if (!entry) continue;
    const prepared = checkNode(id, entry.def, entry.inputs, graph, known, issue);
    analysis.nodes.set(id, prepared);
    for (const link of Object.values(prepared.links)) pending.push(link.from);
  }

  // One depth-first walk orders the nodes and meets any cycle; only a graph with one pays for
  // finding every node on a cycle (the error names them all).
  const order = executionOrder(analysis.outputs, analysis.nodes);
  if (order !== null) analysis.order = order;
  else for (const id of [...nodesOnCycles(analysis.nodes)].sort(compareNodeIds)) issue(id, "", "cycle", comfyError.dependencyCycle(), `Node ${id} is on a dependency cycle: its inputs lead back to its own output.`);
  // Sizes are checked once the graph is otherwise sound (they read coerced literals).
  if (analysis.issues.length === 0) checkSizes(analysis, options, (id, field, message) => {
    analysis.issues.push({ node_id: id, field, reason: "out_of_range", comfy: comfyError.customValidationFailed(field, message), message });
  });

  // Only error reports read `dependents` (ComfyUI's dependent_outputs), and walking every
  // output's ancestors is quadratic in deep graphs: skip it for a valid graph.
  if (analysis.issues.length > 0) {
    for (const o of analysis.outputs) {
      for (const id of ancestorsOf(o, analysis.nodes)) {
        const list = analysis.dependents.get(id) ?? [];
        list.push(o);
        analysis.dependents.set(id, list);
      }
    }
  }
  return analysis;
}

/**
 * Tensor sizes known from literals, followed along links: a node whose inputs and new outputs
 * together exceed the memory budget can never run (they are all held while it runs), and an
 * encoder given frames it cannot write can never succeed. Unknown sizes (a loaded file) pass.
 */
function checkSizes(analysis: Analysis, options: AnalyzeOptions, refuse: (id: string, field: string, message: string) => void): void {
  const budget = options.jobMemoryBytes;
  const shapes = new Map<string, readonly (TensorShape | undefined)[]>();
  // Values made by a refused node: their consumers are not refused again for the same bytes.
  const refused = new Set<TensorShape>();
  for (const id of analysis.order) {
    const node = analysis.nodes.get(id)!;
    const inputs: Record<string, TensorShape | undefined> = {};
    for (const [name, link] of Object.entries(node.links)) inputs[name] = shapes.get(link.from)?.[link.index];
    const outputs = node.def.shapes?.(node.literals, inputs) ?? [];
    shapes.set(id, outputs);
    const held = new Set(Object.values(inputs).filter((s) => s !== undefined));
    let bytes = 0;
    for (const s of held) bytes += shapeBytes(s);
    for (const s of outputs) if (s && !held.has(s)) bytes += shapeBytes(s);
    if (budget !== undefined && bytes > budget) {
      for (const s of outputs) if (s) refused.add(s);
      if (![...held].some((s) => refused.has(s))) {
        refuse(id, "", `needs at least ${formatBytes(bytes)} of tensors, more than the job memory budget of ${formatBytes(budget)}`);
      }
    }
    const limit = node.def.limits?.(node.literals, inputs);
    if (limit) refuse(id, limit.field, limit.message);
  }
}

/** Records one error: its reason, ComfyUI's item, a sentence for people and an optional hint (a "did you mean"). */
type Report = (node_id: string, field: string, reason: ValidationReason, comfy: ComfyErrorItem, message: string, hint?: string) => void;

/** ComfyUI's item with flowgate's hint beside its own fields (extra_info varies by type in ComfyUI too). */
function withHint(item: ComfyErrorItem, hint: string): ComfyErrorItem {
  return { ...item, extra_info: { ...item.extra_info, hint } };
}

/** Where a file input's value comes from, said once for every hint that needs it. */
const UPLOAD_HINT = "Upload one (POST /api/v2/assets, or POST /api/upload/image on the hosted interface) and give its name or a core/ASSET reference.";

/** "image" for an image loader's input, "file" otherwise. */
function fileWord(def: NodeDefinition, name: string): string {
  return name === "image" || /Image/.test(def.name) ? "image" : name === "audio" || /Audio/.test(def.name) ? "audio file" : name === "video" || /Video/.test(def.name) ? "video" : "file";
}

/** A value as quoted in a message, cut short. */
function shown(value: unknown): string {
  const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function checkNode(
  id: string,
  def: NodeDefinition,
  inputs: Record<string, unknown>,
  graph: Record<string, unknown>,
  known: Map<string, { def: NodeDefinition }>,
  issue: Report,
): PreparedNode {
  const prepared: PreparedNode = { id, class_type: def.name, def, literals: {}, links: {}, files: {} };
  const declared = declaredInputs(def);
  for (const name of declared) {
    const { spec, required } = findInput(def, name)!;
    if (!Object.hasOwn(inputs, name)) {
      if (!required) continue;
      // An input the node does not know whose name is near this one was likely meant for it.
      const given = Object.keys(inputs).find((k) => !declared.includes(k) && closest(k, [name]) === name);
      const hint = given !== undefined ? `It was given "${given}": did you mean "${name}"?` : def.fileInputs?.includes(name) ? `No ${fileWord(def, name)} was chosen. ${UPLOAD_HINT}` : undefined;
      issue(id, name, "missing_input", comfyError.requiredInputMissing(name), `${def.name} needs the input "${name}".`, hint);
      continue;
    }
    let value = inputs[name];
    if (Array.isArray(value)) {
      checkLink(id, def, name, spec, value, graph, known, prepared, issue);
      continue;
    }
    // ComfyUI unwraps {"__value__": x}, used to pass a list as a widget value.
    if (isPlainObject(value) && Object.hasOwn(value, "__value__")) value = value.__value__;
    checkLiteral(id, def, name, spec, value, prepared, issue);
  }
  return prepared;
}

function checkLink(
  id: string,
  def: NodeDefinition,
  name: string,
  spec: InputSpec,
  value: unknown[],
  graph: Record<string, unknown>,
  known: Map<string, { def: NodeDefinition }>,
  prepared: PreparedNode,
  issue: Report,
): void {
  const link = readLink(value);
  if (!link) {
    issue(id, name, "bad_link", comfyError.badLinkedInput(name, spec, value), `Input "${name}" holds a list that is not a link: a link is [node_id, output_index].`);
    return;
  }
  const [from, index] = link;
  if (!Object.hasOwn(graph, from)) {
    issue(id, name, "bad_link", comfyError.exceptionDuringValidation("KeyError", `'${from}'`), `Input "${name}" links to node ${shown(from)}, which is not in the workflow.`);
    return;
  }
  const source = known.get(from);
  // A source with a bad or unknown class carries its own error; nothing more to say here.
  if (!source) return;
  if (index >= source.def.output.length) {
    const n = source.def.output.length;
    issue(id, name, "bad_link", comfyError.exceptionDuringValidation("IndexError", "tuple index out of range"), `Input "${name}" links to output ${index} of node ${from} (${source.def.name}), which has ${n} output${n === 1 ? "" : "s"} (0${n > 1 ? `-${n - 1}` : ""}).`);
    return;
  }
  const received = source.def.output[index]!;
  const isFile = def.fileInputs?.includes(name) ?? false;
  if (isFile || !typesCompatible(received, spec[0])) {
    const message = isFile
      ? `Input "${name}" takes an uploaded file name or a core/ASSET reference, not a link.`
      : `Input "${name}" takes ${typeText(spec[0])}, but output ${index} of node ${from} (${source.def.name}) is ${received}.`;
    issue(id, name, "type_mismatch", comfyError.returnTypeMismatch(name, spec, received, value), message);
    return;
  }
  prepared.links[name] = { from, index };
}

function checkLiteral(
  id: string,
  def: NodeDefinition,
  name: string,
  spec: InputSpec,
  value: unknown,
  prepared: PreparedNode,
  issue: Report,
): void {
  const type = spec[0];
  if (def.fileInputs?.includes(name)) {
    if (isAssetObject(value)) {
      const parsed = parseAssetRef(value);
      if ("problem" in parsed) issue(id, name, "type_mismatch", comfyError.invalidInputType(name, spec, value, `malformed core/ASSET reference: ${parsed.problem}`), `Input "${name}" holds a malformed core/ASSET reference: ${parsed.problem}.`);
      else prepared.files[name] = { kind: "asset", ref: parsed.ref };
    } else if (typeof value === "string" && value.length > 0) {
      prepared.files[name] = { kind: "upload", name: value };
    } else if (typeof value === "string") {
      issue(id, name, "not_in_options", comfyError.valueNotInList(name, spec, value, []), `Input "${name}" is empty.`, `No ${fileWord(def, name)} was chosen. ${UPLOAD_HINT}`);
    } else {
      issue(id, name, "type_mismatch", comfyError.invalidInputType(name, spec, value, "expected an uploaded file name or a core/ASSET reference"), `Input "${name}" takes an uploaded file name or a core/ASSET reference, not ${shown(value)}.`);
    }
    return;
  }
  if (isAssetObject(value)) {
    issue(id, name, "type_mismatch", comfyError.invalidInputType(name, spec, value, "a core/ASSET reference is accepted only by file inputs"), `Input "${name}" is not a file input: a core/ASSET reference is accepted only by inputs such as LoadImage's image.`);
    return;
  }
  if (type === "*") {
    prepared.literals[name] = value;
    return;
  }
  const options = comboOptions(spec);
  if (options) {
    if (!options.some((o) => o === value)) {
      const near = typeof value === "string" ? closest(value, options.filter((o): o is string => typeof o === "string")) : null;
      const list = options.length <= 12 ? `: ${options.map(shown).join(", ")}` : ` (${options.length} of them)`;
      issue(id, name, "not_in_options", comfyError.valueNotInList(name, spec, value, options), `Input "${name}" is ${shown(value)}, not one of its options${list}.`, near ? `Did you mean "${near}"?` : undefined);
    }
    else prepared.literals[name] = value;
    return;
  }
  if (typeof type !== "string" || !WIDGET_TYPES.has(type)) {
    issue(id, name, "type_mismatch", comfyError.invalidInputType(name, spec, value, `a ${typeof type === "string" ? type : "COMBO"} input takes a link`), `Input "${name}" takes a link from a node's ${typeof type === "string" ? type : "COMBO"} output, not a value.`);
    return;
  }
  let coerced: unknown;
  if (type === "INT" || type === "FLOAT") {
    const c = type === "INT" ? intOf(value) : pyFloat(isBigInteger(value) ? Number(value.rawJSON) : value);
    if (!c.ok) {
      issue(id, name, "type_mismatch", comfyError.invalidInputType(name, spec, value, c.error), `Input "${name}" takes ${type === "INT" ? "a whole number" : "a number"}, not ${shown(value)}.`);
      return;
    }
    coerced = c.value;
    const opts = spec[1] ?? {};
    const show = (n: unknown) => (type === "FLOAT" && typeof n === "number" ? pyFloatRepr(n) : pyRepr(n));
    if (isBound(opts.min) && compareNumbers(c.value, opts.min) < 0) {
      issue(id, name, "out_of_range", comfyError.valueSmallerThanMin(name, spec, c.value, opts.min, show), `Input "${name}" is ${show(c.value)}, below its minimum of ${show(opts.min)}.`);
      return;
    }
    if (isBound(opts.max) && compareNumbers(c.value, opts.max) > 0) {
      issue(id, name, "out_of_range", comfyError.valueBiggerThanMax(name, spec, c.value, opts.max, show), `Input "${name}" is ${show(c.value)}, above its maximum of ${show(opts.max)}.`);
      return;
    }
  } else if (type === "STRING") {
    coerced = pyStr(value); // an exact integer's digits, as Python's str()
    // Output names come back in every read of the job: a prefix is bounded like a path.
    if (name === "filename_prefix" && (coerced as string).length > MAX_FILENAME_PREFIX) {
      issue(id, name, "out_of_range", comfyError.invalidInputType(name, spec, `${(coerced as string).slice(0, 32)}...`, `filename_prefix is longer than ${MAX_FILENAME_PREFIX} characters`), `Input "filename_prefix" is longer than ${MAX_FILENAME_PREFIX} characters.`);
      return;
    }
    // A prefix that leaves the output folder would fail only when the node saves: refuse it now.
    const problem = name === "filename_prefix" ? prefixProblem(coerced as string) : null;
    if (problem !== null) {
      issue(id, name, "out_of_range", comfyError.invalidInputType(name, spec, coerced, problem), `Input "filename_prefix" is not allowed: ${problem}`);
      return;
    }
  } else {
    coerced = pyBool(value);
  }
  prepared.literals[name] = coerced;
}

/** int(v), exact beyond 2^53 (Python's ints are): such an integer stays a raw JSON integer. */
function intOf(v: unknown): { ok: true; value: number | RawJson } | { ok: false; error: string } {
  if (isBigInteger(v)) return { ok: true, value: v };
  if (typeof v === "string" && /^\s*[+-]?\d(?:_?\d)*\s*$/.test(v)) {
    const n = BigInt(v.trim().replace(/_/g, ""));
    return { ok: true, value: exactInteger(n) };
  }
  return pyInt(v);
}

/** A bound of a number input: a number, or an exact integer beyond 2^53 (ComfyUI's seeds go to 2^64 - 1). */
function isBound(v: unknown): v is number | RawJson {
  return typeof v === "number" || isBigInteger(v);
}

/** The sign of a - b, exact where either is an integer beyond 2^53. */
function compareNumbers(a: number | RawJson, b: number | RawJson): number {
  if (typeof a === "number" && typeof b === "number") return Math.sign(a - b);
  const ia = bigIntOf(a);
  const ib = bigIntOf(b);
  if (ia !== null && ib !== null) return ia < ib ? -1 : ia > ib ? 1 : 0;
  // A fraction against a huge integer: doubles order them correctly.
  const na = typeof a === "number" ? a : Number(a.rawJSON);
  const nb = typeof b === "number" ? b : Number(b.rawJSON);
  return Math.sign(na - nb);
}

/** A node and everything it depends on (within the prepared nodes). */
function ancestorsOf(start: string, nodes: Map<string, PreparedNode>): Set<string> {
  const seen = new Set<string>();
  const stack = [start];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (seen.has(id) || !nodes.has(id)) continue;
    seen.add(id);
    for (const link of Object.values(nodes.get(id)!.links)) stack.push(link.from);
  }
  return seen;
}

/** Nodes on a dependency cycle (Tarjan's strongly connected components, iterative). */
function nodesOnCycles(nodes: Map<string, PreparedNode>): Set<string> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const result = new Set<string>();
  let counter = 0;
  const edges = (id: string) => Object.values(nodes.get(id)!.links).map((l) => l.from).filter((f) => nodes.has(f));
  for (const root of nodes.keys()) {
    if (index.has(root)) continue;
    const work: { id: string; next: number; targets: string[] }[] = [];
    const open = (id: string) => {
      index.set(id, counter);
      low.set(id, counter);
      counter++;
      stack.push(id);
      onStack.add(id);
      work.push({ id, next: 0, targets: edges(id) });
    };
    open(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      if (frame.next < frame.targets.length) {
        const target = frame.targets[frame.next++]!;
        if (!index.has(target)) open(target);
        else if (onStack.has(target)) low.set(frame.id, Math.min(low.get(frame.id)!, index.get(target)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.id, Math.min(low.get(parent.id)!, low.get(frame.id)!));
      if (low.get(frame.id) === index.get(frame.id)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.id);
        const selfLoop = component.length === 1 && frame.targets.includes(frame.id);
        if (component.length > 1 || selfLoop) for (const m of component) result.add(m);
      }
    }
  }
  return result;
}

/** Post-order from the outputs: every node after the nodes it reads from; null when a path loops. */
function executionOrder(outputs: string[], nodes: Map<string, PreparedNode>): string[] | null {
  const order: string[] = [];
  const seen = new Set<string>();
  /** The nodes on the current path from an output: meeting one again closes a cycle. */
  const onPath = new Set<string>();
  const work: { id: string; deps: string[]; next: number }[] = [];
  for (const root of outputs) {
    const rootNode = nodes.get(root);
    if (rootNode === undefined || seen.has(root)) continue;
    seen.add(root);
    onPath.add(root);
    work.push({ id: root, deps: linkSources(rootNode), next: 0 });
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      if (frame.next === frame.deps.length) {
        work.pop();
        onPath.delete(frame.id);
        order.push(frame.id);
        continue;
      }
      const dep = frame.deps[frame.next++]!;
      if (onPath.has(dep)) return null;
      const node = nodes.get(dep);
      if (node === undefined || seen.has(dep)) continue;
      seen.add(dep);
      onPath.add(dep);
      work.push({ id: dep, deps: linkSources(node), next: 0 });
    }
  }
  return order;
}

function linkSources(node: PreparedNode): string[] {
  const sources: string[] = [];
  for (const name in node.links) sources.push(node.links[name]!.from);
  return sources;
}

/** Turns an analysis into the public result with both error shapes. */
export function validationResult(analysis: Analysis): ValidationResult {
  const valid = analysis.issues.length === 0;
  // Keyed by client node ids, which may be any string ("__proto__", "valueOf"): no prototype.
  const nodeErrors: Record<string, FieldError[]> = Object.create(null);
  for (const i of analysis.issues) (nodeErrors[i.node_id] ??= []).push({ field: i.field, reason: i.reason, ...(i.message ? { message: i.message } : {}) });
  return {
    valid,
    node_errors: nodeErrors,
    comfy: valid ? null : comfyShape(analysis),
    output_nodes: valid ? [...analysis.outputs] : [],
  };
}

function comfyShape(analysis: Analysis): ComfyValidationError {
  const nodeErrors: Record<string, ComfyNodeErrors> = Object.create(null);
  for (const i of analysis.issues) {
    if (i.node_id === "") continue;
    const entry = (nodeErrors[i.node_id] ??= {
      errors: [],
      dependent_outputs: [...(analysis.dependents.get(i.node_id) ?? [])],
      class_type: analysis.classTypes.get(i.node_id) ?? null,
    });
    entry.errors.push(i.comfy);
  }
  const graphLevel = analysis.issues.find((i) => i.node_id === "");
  const missingType = analysis.issues.find((i) => i.comfy.type === "missing_node_type");
  // ComfyUI stops at the first missing class, then at "no outputs"; we still list every node error.
  const error =
    graphLevel?.comfy.type === "invalid_prompt"
      ? graphLevel.comfy
      : missingType
        ? missingType.comfy
        : graphLevel
          ? graphLevel.comfy
          : comfyError.promptOutputsFailedValidation(analysis.issues.map((i) => `${i.comfy.message}: ${i.comfy.details}`));
  return { error, node_errors: nodeErrors };
}

/** A one-line summary of the errors, for logs and error messages. */
export function describeErrors(result: ValidationResult): string {
  const parts = Object.entries(result.node_errors).map(([id, errs]) =>
    `${id === "" ? "graph" : `node ${id}`}: ${errs.map((e) => (e.field ? `${e.field} ${e.reason}` : e.reason)).join(", ")}`,
  );
  return parts.length ? `Invalid workflow (${parts.join("; ")})` : "Valid workflow";
}
