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
//
// The parts: the types (analysis.ts), the node checks (node-checks.ts, size-checks.ts), the plan
// (graph-plan.ts) and the report (validation-report.ts); this file runs them in order.
import { comfyError } from "./comfy-errors.ts";
import { compareNodeIds, isPlainObject } from "./graph.ts";
import { dependentOutputs, executionOrder, nodesOnCycles } from "./graph-plan.ts";
import { checkNode, withHint } from "./node-checks.ts";
import type { NodeDefinition } from "./node-spec.ts";
import type { NodeRegistry } from "./nodes/registry.ts";
import { checkSizes } from "./size-checks.ts";
import { closest } from "./suggest.ts";
import type { Analysis, AnalyzeOptions, Report } from "./analysis.ts";

export type { Analysis, AnalyzeOptions, FieldError, FileRef, Issue, PreparedNode, ValidationReason, ValidationResult } from "./analysis.ts";
export { MAX_FILENAME_PREFIX, typesCompatible } from "./node-checks.ts";
export { describeErrors, validationResult } from "./validation-report.ts";

/** Analyses a graph against a node registry. */
export function analyzeGraph(graph: unknown, registry: NodeRegistry, options: AnalyzeOptions = {}): Analysis {
  const analysis: Analysis = { issues: [], outputs: [], nodes: new Map(), order: [], dependents: new Map(), classTypes: new Map() };
  const issue: Report = (node_id, field, reason, comfy, message, hint) =>
    analysis.issues.push({ node_id, field, reason, comfy: hint ? withHint(comfy, hint) : comfy, message: hint ? `${message} ${hint}` : message });
  if (!isPlainObject(graph)) {
    issue(
      "",
      "",
      "bad_node",
      comfyError.invalidPrompt("The workflow must be a JSON object keyed by node id"),
      "The workflow must be a JSON object keyed by node id.",
    );
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
        near
          ? `This server has no node class "${node.class_type}".`
          : `This server has no node class "${node.class_type}"; GET /api/object_info lists the classes it has.`,
        near ? `Did you mean "${near}"?` : undefined,
      );
      continue;
    }
    if (node.inputs !== undefined && !isPlainObject(node.inputs)) {
      issue(
        id,
        "",
        "bad_node",
        comfyError.exceptionDuringValidation("TypeError", "inputs must be an object of input name to value"),
        "The node's inputs must be an object of input name to value.",
      );
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
  else
    for (const id of [...nodesOnCycles(analysis.nodes)].sort(compareNodeIds))
      issue(id, "", "cycle", comfyError.dependencyCycle(), `Node ${id} is on a dependency cycle: its inputs lead back to its own output.`);
  // Sizes are checked once the graph is otherwise sound (they read coerced literals).
  if (analysis.issues.length === 0)
    checkSizes(analysis, options, (id, field, message) => {
      analysis.issues.push({ node_id: id, field, reason: "out_of_range", comfy: comfyError.customValidationFailed(field, message), message });
    });

  // Only error reports read `dependents` (ComfyUI's dependent_outputs), and walking every
  // output's ancestors is quadratic in deep graphs: skip it for a valid graph.
  if (analysis.issues.length > 0) analysis.dependents = dependentOutputs(analysis.outputs, analysis.nodes);
  return analysis;
}
