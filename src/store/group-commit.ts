// The group commit of job submissions, shared by both stores: the submissions of one event-loop
// turn, and any that arrive while the previous batch commits, commit together; batches commit one
// after another, in submission order. One submission's failure never fails the others.

/** What a commit decided for each item of its batch, in the batch's order. */
export type Outcomes<R> = Array<PromiseSettledResult<R>>;

/**
 * Commits `items` in one transaction (`batched`: several submissions; a reused key then fails
 * only its own item, as a rejected outcome) and returns their outcomes; throws when the
 * transaction failed as a whole (it rolled back).
 */
export type CommitBatch<T, R> = (items: T[], batched: boolean) => Outcomes<R> | Promise<Outcomes<R>>;

interface Waiting<T, R> {
  item: T;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

/** Batches submissions into shared commits. */
export class GroupCommit<T, R> {
  readonly #commit: CommitBatch<T, R>;
  #waiting: Array<Waiting<T, R>> = [];
  #flushing: Promise<void> = Promise.resolve();

  constructor(commit: CommitBatch<T, R>) {
    this.#commit = commit;
  }

  /** Queues `item` for the next batch; resolves or rejects with its own outcome once committed. */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      // The first submission of a turn schedules the batch, after the turn's other submissions.
      if (this.#waiting.push({ item, resolve, reject }) === 1) setImmediate(() => void this.flush());
    });
  }

  /**
   * Commits what is waiting. A batch is taken when its turn comes, not when it is queued: whatever
   * arrived while the previous one committed joins it, instead of waiting in a row of one-item
   * transactions. Resolves once every batch so far settled (close() waits for it); never rejects.
   */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(() => {
      const batch = this.#waiting;
      this.#waiting = [];
      return batch.length === 0 ? undefined : this.#settle(batch);
    });
    return this.#flushing;
  }

  /**
   * Commits a batch in one transaction; when that fails as a whole, it rolled back and each item
   * commits in a transaction of its own, so that one bad item never fails the others.
   */
  async #settle(batch: Array<Waiting<T, R>>): Promise<void> {
    let outcomes: Outcomes<R>;
    try {
      outcomes = await this.#commit(
        batch.map((waiting) => waiting.item),
        true,
      );
    } catch {
      outcomes = [];
      for (const { item } of batch) {
        try {
          outcomes.push(...(await this.#commit([item], false)));
        } catch (reason) {
          outcomes.push({ status: "rejected", reason });
        }
      }
    }
    batch.forEach((waiting, i) => {
      const outcome = outcomes[i]!;
      if (outcome.status === "fulfilled") waiting.resolve(outcome.value);
      else waiting.reject(outcome.reason);
    });
  }
}
