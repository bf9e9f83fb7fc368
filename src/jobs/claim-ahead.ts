// How many jobs a worker claims beyond its engine slots. A claim rides the statement that ends the
// slots' runs, and the worker waits for its answer (a round trip and a commit) before the next
// graphs start: with runs that take about as long as that, the worker and the database take turns
// and each idles half the time. Jobs claimed ahead run while the next statement is in flight.
// They are `running` from their claim (JOB-7: started_at is the claim's) and wait in the worker
// for a slot, so only while runs are short: a long run turns the claims ahead off at once.

/** A run whose graph took longer than this (ms) is long: no job is claimed ahead after it. */
export const SHORT_RUN_MS = 10;

/** Claims ahead follow the engine's recent runs: as many as the slots after enough short ones in a row, none after a long one. */
export class ClaimAhead {
  readonly #slots: number;
  readonly #shortMs: number;
  /** Short runs in a row since the last long one. */
  #streak = 0;

  constructor(slots: number, shortMs = SHORT_RUN_MS) {
    this.#slots = slots;
    this.#shortMs = shortMs;
  }

  /** A run's graph took `ms` in the engine (its wait for a slot not counted). */
  ran(ms: number): void {
    this.#streak = ms <= this.#shortMs ? this.#streak + 1 : 0;
  }

  /** Jobs to claim beyond the slots now: the slots' count once twice as many runs in a row were short, else none. */
  get jobs(): number {
    return this.#streak >= 2 * this.#slots ? this.#slots : 0;
  }
}
