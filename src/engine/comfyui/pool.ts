// The ComfyUI instances of the backend and the choice of one for a job: the least busy of
// those that are reachable and know every class of the graph.
import { EngineError, ExecutionCancelledError } from "../errors.ts";
import { Instance, type InstanceTimings } from "./instance.ts";
import type { OutputFolderSetting } from "./output-folder.ts";

/** An instance's state at the moment of choosing. */
export interface Candidate {
  index: number;
  /** queue_remaining plus prompts chosen for it but not yet accepted. */
  load: number;
  /** Prompts this backend follows on it. */
  active: number;
}

/** The least busy candidate; ties go to fewer prompts of ours, then round-robin from `turn`. */
export function leastBusy(candidates: readonly Candidate[], turn: number, size: number): Candidate | null {
  let best: Candidate | null = null;
  const rank = (c: Candidate) => (c.index - (turn % size) + size) % size;
  for (const c of candidates) {
    if (!best || c.load < best.load || (c.load === best.load && (c.active < best.active || (c.active === best.active && rank(c) < rank(best))))) best = c;
  }
  return best;
}

/** Every instance, probed together. */
export class InstancePool {
  readonly instances: Instance[];
  private turn = 0;

  /** One instance per URL; `outputFolders` holds each one's output folder setting, by index (default auto). */
  constructor(urls: readonly string[], timings: InstanceTimings, outputFolders: readonly OutputFolderSetting[] = []) {
    if (urls.length === 0) throw new Error("the comfyui engine needs at least one ComfyUI URL");
    this.instances = urls.map((u, i) => new Instance(u, timings, outputFolders[i]));
    for (const inst of this.instances) inst.othersReachable = () => this.instances.some((o) => o !== inst && o.reachable);
  }

  /** The load of each instance, null for those that cannot be reached. */
  probeAll(): Promise<(number | null)[]> {
    return Promise.all(this.instances.map((i) => i.probe()));
  }

  /**
   * Chooses an instance for a graph and reserves a place on it (release it once the prompt is
   * accepted or given up). Waits for one to be reachable until `deadline`, then fails with
   * worker_lost; an aborted signal rejects with ExecutionCancelledError.
   */
  async choose(classTypes: readonly string[], signal: AbortSignal | undefined, deadline: number): Promise<Instance> {
    for (let wait = 250; ; wait = Math.min(wait * 2, 2000)) {
      if (signal?.aborted) throw new ExecutionCancelledError();
      const loads = await this.probeAll();
      const candidates: Candidate[] = [];
      this.instances.forEach((inst, index) => {
        const load = loads[index];
        if (load === null || load === undefined) return;
        const registry = inst.registry;
        if (registry && !classTypes.every((c) => registry.has(c))) return;
        candidates.push({ index, load: load + inst.reserved, active: inst.active });
      });
      const best = leastBusy(candidates, this.turn++, this.instances.length);
      if (best) {
        const chosen = this.instances[best.index]!;
        chosen.reserved++;
        return chosen;
      }
      if (Date.now() + wait > deadline) {
        throw new EngineError({ code: "worker_lost", message: "No ComfyUI instance could take this job.", node_id: null, class_type: null, traceback: null });
      }
      await sleep(wait, signal);
    }
  }

  close(): void {
    for (const i of this.instances) i.close();
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
