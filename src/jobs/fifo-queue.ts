// The in-memory queue of waiting jobs, in submission (seq) order, with O(log n) positions:
// GET of a queued job must stay cheap with 100,000 jobs waiting.

/** FIFO of job ids with removal anywhere and fast "how many are ahead of me". */
export class FifoQueue {
  private ids: (string | null)[] = [];
  private readonly index = new Map<string, number>();
  private tree: number[] = [0]; // Fenwick tree over slots, 1-based: 1 for a live slot
  private head = 0;

  /** Number of waiting jobs. */
  get size(): number {
    return this.index.size;
  }

  /** Appends a job (callers append in seq order); false when it is already waiting. */
  push(id: string): boolean {
    if (this.index.has(id)) return false;
    const slot = this.ids.length;
    this.ids.push(id);
    this.tree.push(0);
    // A new Fenwick node covers the range ending at it: its value is the sum of that range.
    const i = slot + 1;
    const lowbit = i & -i;
    let sum = 1;
    for (let j = i - 1; j > i - lowbit; j -= j & -j) sum += this.tree[j]!;
    this.tree[i] = sum;
    this.index.set(id, slot);
    return true;
  }

  /** Removes a job wherever it is; false when absent. */
  remove(id: string): boolean {
    const slot = this.index.get(id);
    if (slot === undefined) return false;
    this.index.delete(id);
    this.ids[slot] = null;
    for (let i = slot + 1; i < this.tree.length; i += i & -i) this.tree[i]! -= 1;
    this.maybeCompact();
    return true;
  }

  /** Whether the job is waiting. */
  has(id: string): boolean {
    return this.index.has(id);
  }

  /** Jobs ahead of this one (0 = next to start), or null when it is not waiting. */
  position(id: string): number | null {
    const slot = this.index.get(id);
    if (slot === undefined) return null;
    let sum = 0;
    for (let i = slot; i > 0; i -= i & -i) sum += this.tree[i]!;
    return sum;
  }

  /** The waiting id with `k` jobs ahead of it (0 = the head), or undefined; O(log n). */
  at(k: number): string | undefined {
    if (!Number.isInteger(k) || k < 0 || k >= this.size) return undefined;
    // Descend the Fenwick tree to the first slot whose prefix count reaches k + 1.
    let slot = 0;
    let left = k + 1;
    let step = 1;
    while (step * 2 < this.tree.length) step *= 2;
    for (; step > 0; step >>= 1) {
      const next = slot + step;
      if (next < this.tree.length && this.tree[next]! < left) {
        slot = next;
        left -= this.tree[next]!;
      }
    }
    return this.ids[slot] ?? undefined;
  }

  /** Waiting ids from the head, in order. */
  *entries(): Generator<string> {
    for (let s = this.head; s < this.ids.length; s++) {
      const id = this.ids[s];
      if (id !== null && id !== undefined) yield id;
    }
  }

  /** The first waiting id, or undefined. */
  peek(): string | undefined {
    while (this.head < this.ids.length && this.ids[this.head] === null) this.head++;
    return this.ids[this.head] ?? undefined;
  }

  /** Rebuilds the arrays when most slots are dead, so memory follows the live size. */
  private maybeCompact(): void {
    if (this.ids.length < 1024 || this.index.size * 2 > this.ids.length) return;
    const live = this.ids.filter((x): x is string => x !== null);
    this.ids = [];
    this.tree = [0];
    this.index.clear();
    this.head = 0;
    for (const id of live) this.push(id);
  }
}
