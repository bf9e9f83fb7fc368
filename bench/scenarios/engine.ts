// Engine figures, in process (they are about the engine, not the server):
// - validating a graph of `engineNodes` built-in nodes, against a JSON round trip of the same graph;
// - the overhead per node of engine.execute() (trivial nodes, cache off) beyond calling the
//   node functions directly in topological order, for a chain and for a wide reduction tree.
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { noCheckpoint, type NodeContext, type NodeDefinition, type NodeResult } from "../../src/engine/node-spec.ts";
import type { BenchContext } from "../lib/context.ts";
import { chainGraph, mixedGraph, treeGraph, trivialNodes } from "../lib/graphs.ts";
import { judge, type Figure } from "../lib/report.ts";
import { median, medianRatio, nowMs } from "../lib/stats.ts";

type Graph = Record<string, { class_type: string; inputs: Record<string, unknown> }>;

const directContext: NodeContext = {
  node_id: "",
  class_type: "",
  signal: new AbortController().signal,
  throwIfAborted: () => undefined,
  sleep: async () => undefined,
  checkpoint: noCheckpoint,
  progress: () => undefined,
  preview: () => undefined,
  log: () => undefined,
  partner: null,
};

/**
 * The floor: each node's run() called in key order (the generators emit topological order), inputs
 * taken from literals and upstream results, no validation, no events, no cache.
 */
async function runDirect(graph: Graph, defs: ReadonlyMap<string, NodeDefinition>): Promise<Map<string, unknown[]>> {
  const values = new Map<string, unknown[]>();
  for (const id of Object.keys(graph)) {
    const node = graph[id]!;
    const inputs: Record<string, unknown> = {};
    for (const k in node.inputs) {
      const v = node.inputs[k];
      inputs[k] = Array.isArray(v) ? values.get(String(v[0]))![v[1] as number] : v;
    }
    const r = defs.get(node.class_type)!.run(directContext, inputs);
    const result: NodeResult = r instanceof Promise ? await r : r;
    values.set(id, result.result ?? []);
  }
  return values;
}

async function time(fn: () => unknown): Promise<number> {
  const t = nowMs();
  await fn();
  return nowMs() - t;
}

export async function engineScenarios(ctx: BenchContext): Promise<Figure[]> {
  const { engineNodes: n, engineRounds: rounds } = ctx.sizes;
  const figures: Figure[] = [];

  // --- validation -------------------------------------------------------------------------
  const validator = new EmbeddedEngine();
  const graph = mixedGraph(Math.round(n / 10));
  const check = validator.validateSync(graph);
  if (!check.valid) throw new Error(`the ${n}-node validation graph is invalid: ${JSON.stringify(check).slice(0, 500)}`);
  for (let i = 0; i < 10; i++) {
    validator.validateSync(graph);
    JSON.parse(JSON.stringify(graph));
  }
  const tValidate: number[] = [];
  const tJson: number[] = [];
  for (let r = 0; r < rounds; r++) {
    tValidate.push(await time(() => validator.validateSync(graph)));
    tJson.push(await time(() => JSON.parse(JSON.stringify(graph))));
  }
  ctx.log(`engine: validate ${n} nodes: median ${median(tValidate).toFixed(2)} ms`);
  figures.push({
    scenario: `Engine: validate a ${n.toLocaleString("en-US")}-node graph`,
    metric: "time",
    value: median(tValidate),
    unit: "ms",
    baseline: { name: "JSON round trip of the graph", value: median(tJson), unit: "ms" },
    ratio: medianRatio(tValidate, tJson),
    target: { on: "value", op: "<=", bound: 5 },
    rounds: tValidate,
    note: "image and text chains of the built-in library, every input checked",
  });

  // --- scheduling overhead ----------------------------------------------------------------
  const engine = new EmbeddedEngine({ cacheBytes: 0, extraNodes: trivialNodes });
  const defs = new Map(trivialNodes.map((d) => [d.name, d]));
  for (const [shape, make] of [
    ["chain", chainGraph],
    ["tree", treeGraph],
  ] as const) {
    let seed = 1;
    for (let i = 0; i < 10; i++) {
      await engine.execute(make(n, seed++));
      await runDirect(make(n, seed++), defs);
    }
    const tExec: number[] = [];
    const tDirect: number[] = [];
    const tValid: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const g1 = make(n, seed++);
      const g2 = make(n, seed++);
      const g3 = make(n, seed++);
      tExec.push(await time(() => engine.execute(g1)));
      tDirect.push(await time(() => runDirect(g2, defs)));
      tValid.push(await time(() => engine.validateSync(g3)));
    }
    const perNode = tExec.map((t, i) => ((t - tDirect[i]!) * 1000) / n);
    const directPerNode = tDirect.map((t) => (t * 1000) / n);
    const validatePerNode = tValid.map((t) => (t * 1000) / n);
    ctx.log(`engine: execute ${shape} of ${n}: ${median(tExec).toFixed(2)} ms, direct ${median(tDirect).toFixed(3)} ms`);
    figures.push({
      scenario: `Engine: scheduling overhead per node, ${n.toLocaleString("en-US")}-node ${shape === "chain" ? "chain" : "reduction tree"} (trivial nodes, cache off)`,
      metric: "overhead/node",
      value: median(perNode),
      unit: "µs",
      baseline: { name: "direct calls", value: median(directPerNode), unit: "µs/node" },
      ratio: medianRatio(tExec, tDirect),
      target: { on: "value", op: "<=", bound: 50 },
      rounds: perNode,
      note: `engine.execute() incl. its own validation (${median(validatePerNode).toFixed(1)} µs/node); ratio = execute time / direct time`,
    });
  }
  return figures.map(judge);
}
