// Queue positions on PostgreSQL without counting the queue on every read. Counting the jobs ahead
// of one at position 25,000 read 25,000 index entries (76 reads/s); here one process at a time
// takes a snapshot of every queued job's place in the fair order into a single row, at most every
// `maxAgeMs`, and every process answers a read by a binary search in its copy of that row.
//
// What a reader may see: the place as of a snapshot at most `maxStaleMs` old (one older than
// `maxAgeMs` still answers while a newer one is taken, unless older than `maxStaleMs`), never a place from an older snapshot than the newest one a previous read saw
// (each read checks the row's version first, so polls that alternate between API nodes never
// step back in time); near the front of the queue (positions below `exactBelow`), and for a job
// that no snapshot holds yet, the exact count, which is cheap there.
import type pg from "pg";
import { inTransaction } from "./postgres-pool.ts";
import { PG_LEASE_SQL, PG_POSITION_SQL } from "./postgres-queries.ts";

/** Key of the advisory lock that lets one process at a time take a snapshot ("poss"). */
const SNAPSHOT_LOCK = 0x706f7373;
/** One (seq int8, position int4) pair, big-endian, sorted by seq. */
const PAIR_BYTES = 12;

interface Snapshot {
  version: number;
  /** The highest seq of any job when it was taken: a job above it was submitted later. */
  maxSeq: number;
  pairs: Buffer;
}

interface SnapshotRow {
  version: string | number;
  max_seq: string | number;
  pairs: Buffer;
}

export interface QueuePositionOptions {
  /** A snapshot older than this (by the database's clock) is taken again. */
  maxAgeMs?: number;
  /** No answer comes from a snapshot older than this: a read waits for a new one. */
  maxStaleMs?: number;
  /** Positions below this are counted exactly: the job next in line always reads 0. */
  exactBelow?: number;
}

/** Positions in the fair order of a queue shared by several processes. */
export class QueuePositions {
  readonly #pool: pg.Pool;
  readonly #maxAgeMs: number;
  readonly #maxStaleMs: number;
  readonly #exactBelow: number;
  #snapshot: Snapshot | null = null;
  #taking: Promise<Snapshot> | null = null;
  #reading: Promise<Snapshot> | null = null;

  constructor(pool: pg.Pool, options: QueuePositionOptions = {}) {
    this.#pool = pool;
    this.#maxAgeMs = options.maxAgeMs ?? 250;
    this.#maxStaleMs = Math.max(this.#maxAgeMs, options.maxStaleMs ?? 1000);
    this.#exactBelow = options.exactBelow ?? 8;
  }

  /** Queued jobs that start before this one (0: next); null when it is not queued. */
  async position(jobId: string): Promise<number | null> {
    const { rows } = await this.#pool.query<{ seq: string | number | null; version: string | number | null; age_ms: string | number | null }>({
      name: "fg_position_probe",
      text: PG_POSITION_SQL.probe,
      values: [jobId],
    });
    const probe = rows[0];
    if (!probe || probe.seq === null) return null;
    const seq = Number(probe.seq);
    let snap = await this.#current(probe.version === null ? null : Number(probe.version), Number(probe.age_ms ?? 0));
    // Submitted after the snapshot: the next one (taken now, or by another process meanwhile) holds it.
    if (seq > snap.maxSeq) snap = await this.#take(seq);
    const place = find(snap, seq);
    // Near the front, or committed after a snapshot that saw later seqs (commits race): count it.
    if (place === null || place < this.#exactBelow) return this.#exact(jobId);
    return place;
  }

  /** The snapshot to answer from, given the version and age the probe read. */
  async #current(version: number | null, ageMs: number): Promise<Snapshot> {
    const mine = this.#snapshot;
    if (version === null || ageMs > this.#maxStaleMs) return this.#take(0);
    if (mine && mine.version === version) {
      // Stale while revalidating: this answer from the newest snapshot, the next from a fresh one.
      if (ageMs > this.#maxAgeMs) void this.#take(0).catch(() => undefined);
      return mine;
    }
    if (mine && mine.version > version) return mine; // the probe's read raced a newer take of ours
    return ageMs > this.#maxAgeMs ? this.#take(0) : this.#read();
  }

  /** Reads the newest snapshot another process took. */
  #read(): Promise<Snapshot> {
    this.#reading ??= (async () => {
      try {
        const { rows } = await this.#pool.query<SnapshotRow>({ name: "fg_position_read", text: PG_POSITION_SQL.read });
        return this.#keep(rows[0]!);
      } finally {
        this.#reading = null;
      }
    })();
    return this.#reading;
  }

  /**
   * Takes a snapshot (one process at a time), unless the one taken by another process while this
   * one waited for the lock is fresh and covers seqs up to `needSeq`.
   */
  async #take(needSeq: number): Promise<Snapshot> {
    for (;;) {
      this.#taking ??= inTransaction(this.#pool, async (client) => {
        await client.query("SELECT pg_advisory_xact_lock($1)", [SNAPSHOT_LOCK]);
        const { rows } = await client.query<{ version: number; max_seq: number; age_ms: number }>({ name: "fg_position_age", text: PG_POSITION_SQL.age });
        const other = rows[0];
        if (other && Number(other.age_ms) <= this.#maxAgeMs && Number(other.max_seq) >= needSeq) {
          if (this.#snapshot?.version === Number(other.version)) return this.#snapshot;
          const read = await client.query<SnapshotRow>({ name: "fg_position_read", text: PG_POSITION_SQL.read });
          return this.#keep(read.rows[0]!);
        }
        const taken = await client.query<SnapshotRow>({ name: "fg_position_take", text: PG_POSITION_SQL.take });
        return this.#keep(taken.rows[0]!);
      }).finally(() => {
        this.#taking = null;
      });
      const snap = await this.#taking;
      if (snap.maxSeq >= needSeq) return snap;
    }
  }

  #keep(row: SnapshotRow): Snapshot {
    const snap = { version: Number(row.version), maxSeq: Number(row.max_seq), pairs: row.pairs };
    if (!this.#snapshot || snap.version > this.#snapshot.version) this.#snapshot = snap;
    return this.#snapshot;
  }

  /** The exact count (reads the jobs ahead: cheap near the front); 0 for a job no longer queued. */
  async #exact(jobId: string): Promise<number> {
    const { rows } = await this.#pool.query<{ position: number }>({ name: "fg_lease_position", text: PG_LEASE_SQL.position, values: [jobId] });
    return rows[0]?.position ?? 0;
  }
}

/** The position the snapshot gives the job of this seq, or null when it holds no such job. */
function find(snap: Snapshot, seq: number): number | null {
  let lo = 0;
  let hi = snap.pairs.length / PAIR_BYTES;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const at = Number(snap.pairs.readBigInt64BE(mid * PAIR_BYTES));
    if (at === seq) return snap.pairs.readInt32BE(mid * PAIR_BYTES + 8);
    if (at < seq) lo = mid + 1;
    else hi = mid;
  }
  return null;
}
