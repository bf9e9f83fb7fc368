// The waiting jobs in the order they start when accounts share the slots: the account with the
// fewest jobs running goes first, ties by submission order. Equivalently, an account's k-th
// waiting job has the level `running + k`, and jobs start by (level, submission order), which
// is the order `position` counts in. Starting a job leaves every level unchanged (its account
// runs one more and waits one fewer), so positions only move when a run ends or a job arrives.
import { FifoQueue } from "./fifo-queue.ts";

/** Waiting jobs of several owners, with fair start order, positions and running counts. */
export class FairQueue {
  /** Every waiting job in submission order (the tie-break). */
  private readonly all = new FifoQueue();
  private readonly byOwner = new Map<string, FifoQueue>();
  private readonly ownerOf = new Map<string, string>();
  private readonly runningOf = new Map<string, number>();

  /** Number of waiting jobs. */
  get size(): number {
    return this.all.size;
  }

  /** Whether the job is waiting. */
  has(id: string): boolean {
    return this.all.has(id);
  }

  /** Waiting ids in submission order. */
  entries(): Generator<string> {
    return this.all.entries();
  }

  /** Appends a job (callers append in submission order); false when it is already waiting. */
  push(id: string, owner: string): boolean {
    if (!this.all.push(id)) return false;
    this.ownerOf.set(id, owner);
    let mine = this.byOwner.get(owner);
    if (!mine) this.byOwner.set(owner, (mine = new FifoQueue()));
    mine.push(id);
    return true;
  }

  /** Takes a job out wherever it is; false when it was not waiting. */
  remove(id: string): boolean {
    if (!this.all.remove(id)) return false;
    const owner = this.ownerOf.get(id)!;
    this.ownerOf.delete(id);
    const mine = this.byOwner.get(owner)!;
    mine.remove(id);
    if (mine.size === 0) this.byOwner.delete(owner);
    return true;
  }

  /** An owner's jobs waiting. */
  waiting(owner: string): number {
    return this.byOwner.get(owner)?.size ?? 0;
  }

  /** An owner's jobs running (as told by `started` and `ended`). */
  running(owner: string): number {
    return this.runningOf.get(owner) ?? 0;
  }

  /** One more job of this owner runs. */
  started(owner: string): void {
    this.runningOf.set(owner, this.running(owner) + 1);
  }

  /** One job of this owner stopped running. */
  ended(owner: string): void {
    const left = this.running(owner) - 1;
    if (left > 0) this.runningOf.set(owner, left);
    else this.runningOf.delete(owner);
  }

  /** Each owner's first waiting job, in start order: fewest running first, then earliest submitted. */
  heads(): Array<{ id: string; owner: string }> {
    const heads: Array<{ id: string; owner: string; running: number; seq: number }> = [];
    for (const [owner, mine] of this.byOwner) {
      const id = mine.peek()!;
      heads.push({ id, owner, running: this.running(owner), seq: this.all.position(id)! });
    }
    return heads.sort((a, b) => a.running - b.running || a.seq - b.seq).map(({ id, owner }) => ({ id, owner }));
  }

  /** Jobs that start before this one in the current order (0 = next), or null when it is not waiting; O(owners log n). */
  position(id: string): number | null {
    const owner = this.ownerOf.get(id);
    if (owner === undefined) return null;
    const rank = this.byOwner.get(owner)!.position(id)!;
    if (this.byOwner.size === 1) return rank;
    const level = this.running(owner) + rank;
    const seq = this.all.position(id)!;
    let ahead = rank;
    for (const [other, queue] of this.byOwner) {
      if (other === owner) continue;
      // The other owner's jobs below this level go first; the one at this level if submitted earlier.
      const below = level - this.running(other);
      if (below <= 0) {
        if (below === 0 && this.all.position(queue.peek()!)! < seq) ahead++;
        continue;
      }
      if (below >= queue.size) {
        ahead += queue.size;
        continue;
      }
      ahead += below;
      if (this.all.position(queue.at(below)!)! < seq) ahead++;
    }
    return ahead;
  }
}
