// What a connection has received so far, in order, and waits for the first item that matches:
// shared by the suite's WebSocket and event-stream clients.

type Waiter<T> = { pred: (item: T) => boolean; resolve: (item: T | undefined) => void };

/** Items received in order until the source ends, with waits on them. */
export class Arrivals<T> {
  readonly items: T[] = [];
  #ended = false;
  #waiters: Array<Waiter<T>> = [];

  /** The source ended: nothing more will arrive. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Records an item and answers every wait it matches. */
  push(item: T): void {
    this.items.push(item);
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.pred(item)) return true;
      w.resolve(item);
      return false;
    });
  }

  /** Marks the end: every open wait answers undefined. */
  end(): void {
    this.#ended = true;
    for (const w of this.#waiters) w.resolve(undefined);
    this.#waiters = [];
  }

  /** The first item (received or to come) matching pred, or undefined at the deadline or the end. */
  waitFor(pred: (item: T) => boolean, timeoutMs: number): Promise<T | undefined> {
    const found = this.items.find(pred);
    if (found || this.#ended) return Promise.resolve(found);
    return new Promise((resolve) => {
      const w: Waiter<T> = {
        pred,
        resolve: (item) => {
          clearTimeout(t);
          resolve(item);
        },
      };
      const t = setTimeout(() => {
        this.#waiters = this.#waiters.filter((x) => x !== w);
        resolve(undefined);
      }, timeoutMs);
      this.#waiters.push(w);
    });
  }
}
