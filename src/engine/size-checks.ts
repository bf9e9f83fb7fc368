// The memory check of a planned graph: tensor sizes known from literals, followed along links in
// run order, against the per-run budget, and each node's own limits on its sizes.
import type { Analysis, AnalyzeOptions } from "./analysis.ts";
import { shapeBytes, type TensorShape } from "./node-spec.ts";
import { formatBytes } from "./run-scope.ts";

/**
 * Tensor sizes known from literals, followed along links: a node whose inputs and new outputs
 * together exceed the memory budget can never run (they are all held while it runs), and an
 * encoder given frames it cannot write can never succeed. Unknown sizes (a loaded file) pass.
 */
export function checkSizes(analysis: Analysis, options: AnalyzeOptions, refuse: (id: string, field: string, message: string) => void): void {
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
