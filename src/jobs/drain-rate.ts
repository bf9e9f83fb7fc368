// How fast the queue drains, to tell a caller refused with `queue_full` when to come back.

/** Remembers recent job completions and turns them into a Retry-After in seconds. */
export class DrainRate {
  private readonly times: number[] = [];
  private readonly window: number;

  constructor(window = 50) {
    this.window = window;
  }

  /** A job left the system (finished, failed or canceled) at `now`. */
  record(now: number): void {
    this.times.push(now);
    if (this.times.length > this.window) this.times.shift();
  }

  /** Seconds until `excess` more jobs have drained at the observed rate, between 1 and 600. */
  retryAfterSeconds(excess: number, now: number): number {
    if (this.times.length < 2) return 5;
    const span = Math.max(1, now - this.times[0]!);
    const perSecond = (this.times.length - 1) / (span / 1000);
    return Math.min(600, Math.max(1, Math.ceil(Math.max(1, excess) / Math.max(perSecond, 1e-3))));
  }
}
