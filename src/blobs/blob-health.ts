// Whether the blob store answers now. A failure that says it is unavailable (a refused or broken
// connection, a timeout, a 5xx) marks it down; while down, a probe asks it again every second
// until it answers, and the change is told once each way. Dispatch waits while it is down (a job
// started then could not store its outputs), and a run's output commit waits for it, bounded.
import { isDependencyUnavailable } from "../domain/network-errors.ts";
import type { BlobStore } from "./blob-store.ts";

export interface BlobHealthOptions {
  /** Called once per change: false when the store went down, true when it answers again. */
  onChange?: (available: boolean, reason: unknown) => void;
  /** Interval of the probe while down, in ms (default 1 s). */
  probeMs?: number;
}

/** The blob store's availability, as its failures and a probe see it. */
export class BlobHealth {
  readonly #blobs: Pick<BlobStore, "check">;
  readonly #onChange: (available: boolean, reason: unknown) => void;
  readonly #probeMs: number;
  #available = true;
  #probe: NodeJS.Timeout | undefined;
  #closed = false;
  /** Waiters of `waitAvailable`, woken when the store answers again. */
  readonly #waiters = new Set<() => void>();

  constructor(blobs: Pick<BlobStore, "check">, options: BlobHealthOptions = {}) {
    this.#blobs = blobs;
    this.#onChange = options.onChange ?? (() => undefined);
    this.#probeMs = options.probeMs ?? 1_000;
  }

  /** False from a failure that said the store is unavailable until a probe or a check passes. */
  get available(): boolean {
    return this.#available;
  }

  /** Notes a failure of any blob operation: one of unavailability marks the store down. */
  noteFailure(err: unknown): void {
    if (!isDependencyUnavailable(err) || this.#closed) return;
    if (this.#available) {
      this.#available = false;
      this.#onChange(false, err);
    }
    this.#scheduleProbe();
  }

  /** Asks the store now (its own short bound, see BlobStore.check); true when it answers. */
  async check(): Promise<boolean> {
    try {
      await this.#blobs.check();
      this.#up();
      return true;
    } catch (err) {
      // A check that fails for another reason (a missing bucket, refused credentials) is not an outage to wait out.
      this.noteFailure(err);
      if (!this.#available) this.#scheduleProbe();
      return false;
    }
  }

  /** Resolves true once the store is available (at once when it is), false when `timeoutMs` passed first or at close. */
  waitAvailable(timeoutMs: number): Promise<boolean> {
    if (this.#available) return Promise.resolve(true);
    if (this.#closed || timeoutMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        resolve(ok);
      };
      const wake = () => done(this.#available);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.#waiters.add(wake);
    });
  }

  /** Stops the probe and wakes the waiters (false). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#probe);
    for (const wake of [...this.#waiters]) wake();
  }

  #up(): void {
    clearTimeout(this.#probe);
    this.#probe = undefined;
    if (this.#available) return;
    this.#available = true;
    this.#onChange(true, null);
    for (const wake of [...this.#waiters]) wake();
  }

  #scheduleProbe(): void {
    if (this.#probe !== undefined || this.#closed) return;
    this.#probe = setTimeout(() => {
      this.#probe = undefined;
      void this.check();
    }, this.#probeMs);
    this.#probe.unref();
  }
}
