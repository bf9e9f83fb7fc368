// Progress snapshots weighted by node count and sampler step; the value never goes back in a run.

/** The contract's Progress object. */
export interface Progress {
  value: number;
  nodes_done: number;
  nodes_total: number;
  current_node: string | null;
  current_node_class: string | null;
  step: number | null;
  steps: number | null;
  message: string | null;
}

/** Folds engine callbacks into complete Progress snapshots. */
export class ProgressTracker {
  private total = 0;
  private readonly done = new Set<string>();
  private current: { node: string; cls: string; step: number | null; steps: number | null } | null = null;
  private last = 0;

  /** The nodes the run will execute (output nodes and their ancestors). */
  plan(nodeIds: readonly string[]): Progress {
    this.total = nodeIds.length;
    return this.snapshot();
  }

  /** Nodes served from cache count as done. */
  cached(nodeIds: readonly string[]): Progress {
    for (const id of nodeIds) this.done.add(id);
    return this.snapshot();
  }

  nodeStart(nodeId: string, classType: string): Progress {
    this.current = { node: nodeId, cls: classType, step: null, steps: null };
    return this.snapshot();
  }

  step(nodeId: string, value: number, max: number): Progress {
    if (this.current?.node === nodeId) {
      this.current.step = value;
      this.current.steps = max;
    }
    return this.snapshot();
  }

  nodeDone(nodeId: string): Progress {
    this.done.add(nodeId);
    if (this.current?.node === nodeId) this.current = null;
    return this.snapshot();
  }

  /** The final snapshot of a successful run. */
  finish(): Progress {
    this.current = null;
    this.last = 1;
    return { value: 1, nodes_done: this.total, nodes_total: this.total, current_node: null, current_node_class: null, step: null, steps: null, message: null };
  }

  private snapshot(): Progress {
    const total = Math.max(this.total, this.done.size);
    const within = this.current?.steps ? Math.min(1, (this.current.step ?? 0) / this.current.steps) : 0;
    const raw = total === 0 ? 0 : (this.done.size + within) / total;
    // Never report going back, and keep 1 for the end of a successful run.
    this.last = Math.max(this.last, Math.min(raw, 0.999999));
    return {
      value: this.last,
      nodes_done: this.done.size,
      nodes_total: total,
      current_node: this.current?.node ?? null,
      current_node_class: this.current?.cls ?? null,
      step: this.current?.step ?? null,
      steps: this.current?.steps ?? null,
      message: null,
    };
  }
}
