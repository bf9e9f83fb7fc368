// The CLI's own fraction done and time left, by work rather than by node count. The contract's
// `progress.value` (PRG-2) counts every node alike, so a run of a loader, a long sampler and a save
// reads 45% at step 7357/8000. Here a stepped node weighs what its steps take at the rate they are
// observed, and the nodes still to come weigh what the step-less nodes seen so far took.
import type { JobStatus, Progress } from "../client/types.ts";

/** What the bar shows of a run's work. */
export interface WorkReading {
  /** 0 to 1; never goes back within a run. */
  fraction: number;
  /** null while there is nothing to estimate from. */
  remainingMs: number | null;
  /** false until a stepped node was seen: the fraction is then the contract's node count. */
  byWork: boolean;
}

/** The node being watched: when it was first seen and its first step reading (the rate's baseline). */
interface WatchedNode {
  id: string;
  seenAt: number;
  /** Whether the node was seen starting (its whole duration is known when it ends). */
  fromStart: boolean;
  stepped: boolean;
  baseStep: number | null;
  baseAt: number;
}

// Too short a window makes the step rate (and so the estimate) jump about.
const MIN_RATE_WINDOW_MS = 1000;

/** Follows progress snapshots and answers the fraction of work done and the time left. */
export class WorkEstimate {
  private node: WatchedNode | null = null;
  private steplessMs = 0;
  /** What the nodes that ended while watched took. */
  private pastMs = 0;
  private steplessCount = 0;
  private steppedSeen = false;
  private shown = 0;
  private watching = false;

  /** Records a reading seen at `now` (null: the job before any progress, e.g. queued). */
  observe(p: Progress | null, now: number): void {
    const id = p?.current_node ?? null;
    if (this.node && this.node.id !== id) this.close(now);
    if (!p) {
      this.watching = true;
      return;
    }
    const stepped = !!p.steps && p.step !== null && p.step !== undefined;
    // A node that starts while the view watches has its whole duration measured; one found running
    // (`flowgate wait` on a running job) has not.
    if (id && !this.node) this.node = { id, seenAt: now, fromStart: this.watching, stepped: false, baseStep: null, baseAt: now };
    if (this.node && stepped && !this.node.stepped) {
      // The rate's baseline is the first step reading seen, so a node found half done is not read as fast.
      Object.assign(this.node, { stepped: true, baseStep: p.step, baseAt: now });
      // The node-count fraction shown so far is not work; the fraction by work starts over once.
      if (!this.steppedSeen) this.shown = 0;
      this.steppedSeen = true;
    }
    this.watching = true;
  }

  /** The reading at `now` for the job's latest snapshot and status. */
  read(p: Progress | null, status: JobStatus, now: number): WorkReading {
    const byWork = this.steppedSeen;
    if (status === "succeeded") return { fraction: (this.shown = 1), remainingMs: null, byWork };
    if (!p) return { fraction: this.shown, remainingMs: null, byWork };
    // Without a stepped node there is nothing but node count to go by.
    if (!byWork) return { fraction: (this.shown = Math.max(this.shown, clamp(p.value))), remainingMs: null, byWork };
    const estimate = this.estimate(p, now);
    // Between stepped nodes (a save, a decode) the fraction holds and no time is promised.
    if (estimate) this.shown = Math.max(this.shown, estimate.fraction);
    return { fraction: this.shown, remainingMs: estimate?.remainingMs ?? null, byWork };
  }

  /** From the running node's step rate: its steps done and left, plus the nodes still to come. */
  private estimate(p: Progress, now: number): { fraction: number; remainingMs: number } | null {
    const node = this.node;
    if (!node?.stepped || node.baseStep === null || !p.steps || p.step === null || p.step === undefined) return null;
    const window = now - node.baseAt;
    const stepsSince = p.step - node.baseStep;
    if (window < MIN_RATE_WINDOW_MS || stepsSince <= 0) return null;
    const msPerStep = window / stepsSince;
    const toCome = Math.max(0, p.nodes_total - p.nodes_done - 1) * this.steplessAverage();
    const left = (p.steps - p.step) * msPerStep + toCome;
    const done = this.pastMs + p.step * msPerStep;
    return { fraction: clamp(done / (done + left)), remainingMs: Math.round(left) };
  }

  private steplessAverage(): number {
    return this.steplessCount === 0 ? 0 : this.steplessMs / this.steplessCount;
  }

  private close(now: number): void {
    const node = this.node!;
    this.pastMs += now - node.seenAt;
    if (node.fromStart && !node.stepped) {
      this.steplessMs += now - node.seenAt;
      this.steplessCount += 1;
    }
    this.node = null;
  }
}

function clamp(x: number): number {
  return Math.min(1, Math.max(0, x));
}
