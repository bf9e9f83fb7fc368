// A latest-wins throttle for one kind of event on one stream: at most one write per interval;
// what arrives in between replaces what waits, and the newest goes out when the interval ends.

/** Writes at most one value per `intervalMs`; a value offered too early waits, and a newer one replaces it. */
export class LatestWins<T> {
  private readonly intervalMs: number;
  private readonly write: (data: T) => void;
  private lastAt = Number.NEGATIVE_INFINITY;
  private pending: T | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(intervalMs: number, write: (data: T) => void) {
    this.intervalMs = intervalMs;
    this.write = write;
  }

  /** Writes `data` now if the interval has passed, else keeps it (replacing any older one) for the end of the interval. */
  offer(data: T): void {
    const now = Date.now();
    if (this.timer === null && now - this.lastAt >= this.intervalMs) {
      this.sent(now);
      this.write(data);
      return;
    }
    this.pending = data;
    this.timer ??= setTimeout(
      () => {
        this.timer = null;
        this.flush();
      },
      this.intervalMs - (now - this.lastAt),
    );
  }

  /** Counts a write made elsewhere (the connect-time replay) against the interval. */
  sent(now = Date.now()): void {
    this.lastAt = now;
  }

  /** Writes the waiting value now, if any. */
  flush(): void {
    this.cancelTimer();
    const data = this.pending;
    this.pending = null;
    if (data !== null) {
      this.sent();
      this.write(data);
    }
  }

  /** Forgets the waiting value and stops the timer. */
  drop(): void {
    this.cancelTimer();
    this.pending = null;
  }

  private cancelTimer(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }
}
