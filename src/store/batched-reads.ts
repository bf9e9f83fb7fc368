// Reads by key, batched: the keys asked for in one event-loop turn, and any asked for while the
// batches before them are out, go to the database in one statement. Under load a round trip costs
// the database and the driver far more than the row it returns; a poll of 16 waiting clients is
// then one round trip, not 16. Each read still starts after it was asked for, so it sees every
// commit that came before it (read-your-writes holds as for a read of its own).

/** Reads the rows of `keys` (distinct) in one statement; a key without a row is left out of the map. */
export type ReadBatch<K, V> = (keys: K[]) => Promise<Map<K, V>>;

interface Waiting<V> {
  resolve: (value: V | undefined) => void;
  reject: (error: unknown) => void;
}

/** Batches point reads into shared statements, at most `maxInFlight` of them out at once. */
export class BatchedReads<K, V> {
  readonly #read: ReadBatch<K, V>;
  readonly #maxInFlight: number;
  #waiting = new Map<K, Array<Waiting<V>>>();
  #scheduled = false;
  #inFlight = 0;

  constructor(read: ReadBatch<K, V>, maxInFlight = 2) {
    this.#read = read;
    this.#maxInFlight = Math.max(1, maxInFlight);
  }

  /** The value of `key` as a statement sent after this call reads it (undefined: no row). */
  get(key: K): Promise<V | undefined> {
    return new Promise<V | undefined>((resolve, reject) => {
      const waiting = this.#waiting.get(key);
      if (waiting === undefined) this.#waiting.set(key, [{ resolve, reject }]);
      else waiting.push({ resolve, reject });
      this.#schedule();
    });
  }

  /** The first read of a turn sends the batch after the turn's other reads (when a statement may go out). */
  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#send();
    });
  }

  #send(): void {
    if (this.#waiting.size === 0 || this.#inFlight >= this.#maxInFlight) return;
    const batch = this.#waiting;
    this.#waiting = new Map();
    this.#inFlight++;
    this.#read([...batch.keys()])
      .then(
        (values) => {
          for (const [key, waiting] of batch) for (const w of waiting) w.resolve(values.get(key));
        },
        (error: unknown) => {
          for (const waiting of batch.values()) for (const w of waiting) w.reject(error);
        },
      )
      .finally(() => {
        this.#inFlight--;
        // What was asked for meanwhile (in earlier turns) goes out now, as one batch.
        this.#send();
      });
  }
}
