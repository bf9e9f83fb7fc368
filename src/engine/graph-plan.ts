// The graph plan: the order nodes run in (every node after the nodes it reads from), the
// ancestors of a node, and the nodes on dependency cycles. Pure graph walks over the links of
// prepared nodes; they check nothing and report nothing.

/** A node as the plan sees it: the nodes its inputs link from. */
export interface PlanNode {
  links: Record<string, { from: string }>;
}

/** A node and everything it depends on (within the prepared nodes). */
export function ancestorsOf(start: string, nodes: ReadonlyMap<string, PlanNode>): Set<string> {
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
export function nodesOnCycles(nodes: ReadonlyMap<string, PlanNode>): Set<string> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const result = new Set<string>();
  let counter = 0;
  const edges = (id: string) =>
    Object.values(nodes.get(id)!.links)
      .map((l) => l.from)
      .filter((f) => nodes.has(f));
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
export function executionOrder(outputs: readonly string[], nodes: ReadonlyMap<string, PlanNode>): string[] | null {
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

function linkSources(node: PlanNode): string[] {
  const sources: string[] = [];
  for (const name in node.links) sources.push(node.links[name]!.from);
  return sources;
}

/** Node id -> the output nodes that depend on it (ComfyUI's dependent_outputs). */
export function dependentOutputs(outputs: readonly string[], nodes: ReadonlyMap<string, PlanNode>): Map<string, string[]> {
  const dependents = new Map<string, string[]>();
  for (const o of outputs) {
    for (const id of ancestorsOf(o, nodes)) {
      const list = dependents.get(id) ?? [];
      list.push(o);
      dependents.set(id, list);
    }
  }
  return dependents;
}
