// What a node's code reaches without it being passed down: the run's memory budget and its
// cooperative yield. The executor enters a scope around each node; tensor allocation
// (media/tensors.ts) charges the budget and long loops yield through it, however deep the call.
import { AsyncLocalStorage } from "node:async_hooks";

/** A node would take the run past its memory budget (JobError code out_of_memory). */
export class OutOfMemoryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OutOfMemoryError";
  }
}

/** Tensor bytes one run holds (values still needed downstream) and allocates, against a limit. */
export class RunMemory {
  readonly limit: number;
  /** Bytes held plus bytes charged by the nodes now running. */
  private used = 0;
  /** Buffers of held values, counted once however many values share them. */
  private readonly held = new Map<ArrayBufferLike, { bytes: number; refs: number }>();

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Counts an allocation about to be made; throws OutOfMemoryError when it would not fit. */
  charge(bytes: number, lease: NodeLease): void {
    if (this.used + bytes > this.limit) {
      throw new OutOfMemoryError(
        `Allocating ${formatBytes(bytes)} would take the job past its memory budget of ${formatBytes(this.limit)} (${formatBytes(this.used)} in use)`,
      );
    }
    this.used += bytes;
    lease.charged += bytes;
  }

  /** A node ended: its allocations are no longer counted as such (what it returned is then held). */
  settle(lease: NodeLease): void {
    this.used -= lease.charged;
    lease.charged = 0;
  }

  /** Counts the buffers of a node's outputs while they wait for their consumers. */
  hold(values: readonly unknown[]): void {
    for (const buffer of buffersOf(values)) {
      const entry = this.held.get(buffer);
      if (entry) entry.refs++;
      else {
        this.held.set(buffer, { bytes: buffer.byteLength, refs: 1 });
        this.used += buffer.byteLength;
      }
    }
  }

  /** The outputs of a node are no longer needed by this run. */
  release(values: readonly unknown[]): void {
    for (const buffer of buffersOf(values)) {
      const entry = this.held.get(buffer);
      if (!entry) continue;
      if (--entry.refs === 0) {
        this.held.delete(buffer);
        this.used -= entry.bytes;
      }
    }
  }
}

/** What one running node has charged. */
export interface NodeLease {
  charged: number;
}

interface Scope {
  memory: RunMemory;
  lease: NodeLease;
  checkpoint: () => Promise<void>;
}

const current = new AsyncLocalStorage<Scope>();

/** Runs a node's code inside its run's scope. */
export function withinNode<T>(scope: Scope, fn: () => T): T {
  return current.run(scope, fn);
}

/** Charges `bytes` to the running node's job; outside a run (direct calls) it does nothing. */
export function chargeAllocation(bytes: number): void {
  const scope = current.getStore();
  if (scope) scope.memory.charge(bytes, scope.lease);
}

/** Yields to the event loop when the running node has had it long enough; outside a run, nothing. */
export function cooperate(): Promise<void> | undefined {
  return current.getStore()?.checkpoint();
}

/** Distinct buffers behind the typed arrays of values (tensors nest them one or two levels down). */
function buffersOf(values: readonly unknown[]): Set<ArrayBufferLike> {
  const found = new Set<ArrayBufferLike>();
  const visit = (v: unknown, depth: number) => {
    if (typeof v !== "object" || v === null) return;
    if (ArrayBuffer.isView(v)) {
      found.add(v.buffer);
      return;
    }
    if (depth >= 3) return;
    for (const x of Array.isArray(v) ? v : Object.values(v)) visit(x, depth + 1);
  };
  for (const v of values) visit(v, 0);
  return found;
}

/** Bytes as MiB or GiB, for messages. */
export function formatBytes(bytes: number): string {
  return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(2)} GiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}
