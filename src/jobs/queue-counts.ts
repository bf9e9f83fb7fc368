// The position of a job a node has just queued, on a shared database, without counting the queue
// on every submission (that read grows with the queue: 22 ms at 20,000 jobs). The deployment's
// per-owner counts are read at most every `maxAgeMs`; this node's own submissions since are
// added to them. A job's place in the fair order (src/jobs/fair-queue.ts) needs only those counts
// when it is the newest job: its level is its owner's running plus queued jobs, and every job of
// a level up to its own is ahead of it.
import type { OwnerCounts } from "../store/index.ts";

interface Snapshot {
  /** When the read was sent. */
  at: number;
  /** The last submission noted before it was sent: later ones are not in it. */
  noted: number;
  /** The changes heard before it was sent: a later one makes it stale. */
  changes: number;
  counts: Map<string, { queued: number; running: number }>;
}

/** Per-owner queue counts of a shared database, refreshed when older than `maxAgeMs`. */
export class SharedQueueCounts {
  private snapshot: Snapshot | null = null;
  private reading: Promise<Snapshot> | null = null;
  /** This node's submissions, numbered in commit order, until a newer snapshot holds them. */
  private local: Array<{ owner: string; n: number }> = [];
  private noted = 0;
  private changes = 0;

  private readonly read: () => Promise<OwnerCounts[]>;
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(read: () => Promise<OwnerCounts[]>, maxAgeMs = 200, now: () => number = performance.now.bind(performance)) {
    this.read = read;
    this.maxAgeMs = maxAgeMs;
    this.now = now;
  }

  /**
   * Jobs ahead of a job of `owner` this node has just committed as queued (the newest job of
   * the queue), as of counts at most `maxAgeMs` old plus this node's submissions since.
   */
  async positionOfNew(owner: string): Promise<number> {
    this.local.push({ owner, n: ++this.noted });
    const snap = await this.current();
    const mine = new Map<string, number>();
    for (const s of this.local) if (s.n > snap.noted) mine.set(s.owner, (mine.get(s.owner) ?? 0) + 1);
    const of = (o: string) => snap.counts.get(o) ?? { queued: 0, running: 0 };
    const own = of(owner);
    // Its owner's running jobs and queued jobs before it (it is among the queued, in the snapshot or in `mine`).
    const level = own.running + own.queued + (mine.get(owner) ?? 0) - 1;
    let atOrBelow = 0;
    for (const o of new Set([...snap.counts.keys(), ...mine.keys()])) {
      const c = of(o);
      atOrBelow += Math.min(c.queued + (mine.get(o) ?? 0), Math.max(0, level + 1 - c.running));
    }
    return Math.max(0, atOrBelow - 1); // every job of a level up to its own is older: all ahead but itself
  }

  /** Something moved in the queue (a job started, ended or left, another node queued jobs): read again before the next answer. */
  changed(): void {
    this.changes++;
  }

  /** The snapshot to answer from: read when there is none or a change came since, refreshed in the background when old. */
  private async current(): Promise<Snapshot> {
    if (this.snapshot === null || this.snapshot.changes !== this.changes) {
      // A read under way that started before the change would not do: wait for it, then read again.
      const snap = await this.refresh();
      return snap.changes === this.changes ? snap : this.refresh();
    }
    if (this.now() - this.snapshot.at > this.maxAgeMs) void this.refresh().catch(() => undefined);
    return this.snapshot;
  }

  private refresh(): Promise<Snapshot> {
    this.reading ??= (async () => {
      const at = this.now();
      const noted = this.noted;
      const changes = this.changes;
      try {
        const rows = await this.read();
        const snap: Snapshot = { at, noted, changes, counts: new Map(rows.map((r) => [r.owner, { queued: r.queued, running: r.running }])) };
        if (this.snapshot === null || this.snapshot.noted <= noted) {
          this.snapshot = snap;
          this.local = this.local.filter((s) => s.n > noted);
        }
        return this.snapshot;
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }
}
