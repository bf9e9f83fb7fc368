// The engine's slots: how many graphs of a dispatcher run at once. A worker may hold more jobs
// than it has slots (claims ahead, src/jobs/claim-ahead.ts): those wait here for one, in order.

/** Gives back a slot taken by EngineSlots.acquire (once; later calls do nothing). */
export type ReleaseSlot = () => void;

/** A counted set of slots with a first-come queue of waiters. */
export class EngineSlots {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  constructor(count: number) {
    this.#free = count;
  }

  /** Slots free now (negative while forced takes exceed them). */
  get free(): number {
    return this.#free;
  }

  /** Runs waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Resolves with the release of a slot once one is free. `force`: taken at once, free or not (a
   * run that must not wait: one adopted, or launched for a free slot). `signal` aborted: at once,
   * without a slot (the run ends before its graph starts).
   */
  acquire(signal?: AbortSignal, force = false): Promise<ReleaseSlot> {
    if (signal?.aborted) return Promise.resolve(() => undefined);
    if (force || (this.#free > 0 && this.#waiting.length === 0)) return Promise.resolve(this.#take());
    return new Promise((resolve) => {
      const turn = () => {
        signal?.removeEventListener("abort", skip);
        resolve(this.#take());
      };
      const skip = () => {
        const at = this.#waiting.indexOf(turn);
        if (at >= 0) this.#waiting.splice(at, 1);
        resolve(() => undefined);
      };
      signal?.addEventListener("abort", skip, { once: true });
      this.#waiting.push(turn);
    });
  }

  #take(): ReleaseSlot {
    this.#free--;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#free++;
      if (this.#free > 0) this.#waiting.shift()?.();
    };
  }
}
