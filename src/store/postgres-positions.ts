// Queue positions on PostgreSQL without counting the queue on every read. Counting the jobs ahead
// of one at position 25,000 read 25,000 index entries (76 reads/s); here one process at a time
// takes a snapshot of the queue (each owner's running count and queued seqs) into a single row,
// at most every `maxAgeMs`, and every process answers a read from its copy of that row: a binary
// search per owner, in the fair order of src/jobs/fair-queue.ts.
//
// What a reader may see: the place as of a snapshot at most `maxStaleMs` old (one older than
// `maxAgeMs` still answers while a newer one is taken), never a place from an older snapshot than
// the newest one a previous read saw (each read checks the row's version first, so polls that
// alternate between API nodes never step back in time; a GET reads it in the same statement as
// the job's row, the store's stamp below, so a poll costs one round trip while the snapshot is
// fresh); near the front of the queue (positions below `exactBelow`), the exact count, which is
// cheap there; a job submitted after the snapshot
// is placed behind everything it holds (and the jobs submitted since before it). When a snapshot takes long (a very deep queue on a busy database), the next ones are
// spaced by a multiple of that time, so the database spends a bounded share of its time on them.
import type pg from "pg";
import { inTransaction } from "./postgres-pool.ts";
import { PG_LEASE_SQL, PG_POSITION_SQL } from "./postgres-queries.ts";
import type { JobRecord } from "./types.ts";

/** The snapshot's version, age and cost as read in the statement that read a job row (null version: none yet). */
interface SnapshotStamp {
  version: number | null;
  ageMs: number;
  tookMs: number;
}

/** Records read with a stamp (the store's getJob of a queued job): held by the record, gone with it. */
const STAMPS = new WeakMap<JobRecord, SnapshotStamp>();

/**
 * Keeps the stamp of the position snapshot read beside a queued job's row (PG_SQL.getJob's
 * `snapshot_*` columns), so that placing the job needs no read of its own. Returns the record.
 */
export function stampSnapshot(job: JobRecord, row: Record<string, unknown>): JobRecord {
  if (job.status !== "queued" || !("snapshot_version" in row)) return job;
  const version = row.snapshot_version;
  STAMPS.set(job, { version: version === null ? null : Number(version), ageMs: Number(row.snapshot_age_ms ?? 0), tookMs: Number(row.snapshot_took_ms ?? 0) });
  return job;
}

/** Key of the advisory lock that lets one process at a time take a snapshot ("poss"). */
const SNAPSHOT_LOCK = 0x706f7373;
const SEQ_BYTES = 8;

/** One owner's part of a snapshot: its jobs running, and its queued seqs in `seqs` from `from`. */
interface OwnerQueue {
  running: number;
  queued: number;
  from: number;
}

interface Snapshot {
  version: number;
  /** The highest seq of any job when it was taken: a job above it was submitted later. */
  maxSeq: number;
  owners: Map<string, OwnerQueue>;
  seqs: Buffer;
}

interface SnapshotRow {
  version: number;
  max_seq: number;
  owners: Array<[string, number, number]>;
  seqs: Buffer;
}

export interface QueuePositionOptions {
  /** A snapshot older than this (by the database's clock) is taken again. */
  maxAgeMs?: number;
  /** No answer comes from a snapshot older than this: a read waits for a new one. */
  maxStaleMs?: number;
  /** Positions below this are counted exactly: the job next in line always reads 0. */
  exactBelow?: number;
  /**
   * Snapshots are at least this many times their own cost apart (and answer up to twice that
   * old), so that a slow one costs the database a bounded share of its time (default 2).
   */
  costFactor?: number;
}

/** Positions in the fair order of a queue shared by several processes. */
export class QueuePositions {
  readonly #pool: pg.Pool;
  readonly #maxAgeMs: number;
  readonly #maxStaleMs: number;
  readonly #exactBelow: number;
  readonly #costFactor: number;
  #snapshot: Snapshot | null = null;
  #taking: Promise<Snapshot> | null = null;
  #reading: Promise<Snapshot> | null = null;

  constructor(pool: pg.Pool, options: QueuePositionOptions = {}) {
    this.#pool = pool;
    this.#maxAgeMs = options.maxAgeMs ?? 250;
    this.#maxStaleMs = Math.max(this.#maxAgeMs, options.maxStaleMs ?? 1000);
    this.#exactBelow = options.exactBelow ?? 8;
    this.#costFactor = options.costFactor ?? 2;
  }

  /**
   * Queued jobs that start before this one (0: next); null when it is not queued. `read`: the
   * job's record as the store just read it; when that read carried the snapshot's stamp, the job
   * is placed from it (no round trip while this process holds that snapshot), else probed.
   */
  async position(jobId: string, read?: JobRecord): Promise<number | null> {
    const stamp = read === undefined || read.id !== jobId ? undefined : STAMPS.get(read);
    let job: { seq: number; owner: string };
    let snapshot: SnapshotStamp;
    if (stamp !== undefined) {
      job = read!;
      snapshot = stamp;
    } else {
      const { rows } = await this.#pool.query<{
        seq: number | null;
        owner: string | null;
        version: number | null;
        age_ms: number | null;
        took_ms: number | null;
      }>({
        name: "fg_position_probe",
        text: PG_POSITION_SQL.probe,
        values: [jobId],
      });
      const probe = rows[0];
      if (!probe || probe.seq === null || probe.owner === null) return null;
      job = { seq: Number(probe.seq), owner: probe.owner };
      snapshot = { version: probe.version === null ? null : Number(probe.version), ageMs: Number(probe.age_ms ?? 0), tookMs: Number(probe.took_ms ?? 0) };
    }
    const snap = await this.#current(snapshot.version, snapshot.ageMs, snapshot.tookMs);
    const place = job.seq > snap.maxSeq ? await this.#placeOfNewer(snap, job.owner, job.seq) : placeOf(snap, job.owner, job.seq);
    // Near the front, or committed after a snapshot that saw later seqs (commits race): count it.
    if (place === null || place < this.#exactBelow) return this.#exact(jobId);
    return place;
  }

  /**
   * The place of a job submitted after the snapshot, from the snapshot and the jobs queued since
   * before it: everything the snapshot holds is older. Jobs that left since still count, so it
   * reads at most what the next snapshot will (in FIFO order).
   */
  async #placeOfNewer(snap: Snapshot, owner: string, seq: number): Promise<number> {
    const { rows } = await this.#pool.query<{ owner: string; n: number }>({
      name: "fg_position_newer",
      text: PG_POSITION_SQL.newer,
      values: [snap.maxSeq, seq],
    });
    const newer = new Map(rows.map((r) => [r.owner, r.n]));
    const of = (o: string) => ({ running: snap.owners.get(o)?.running ?? 0, before: (snap.owners.get(o)?.queued ?? 0) + (newer.get(o) ?? 0) });
    const mine = of(owner);
    const level = mine.running + mine.before;
    let ahead = mine.before;
    // Every job of another owner at a level up to this one's was submitted before it.
    for (const other of new Set([...snap.owners.keys(), ...newer.keys()])) {
      if (other === owner) continue;
      const o = of(other);
      ahead += Math.min(o.before, Math.max(0, level - o.running + 1));
    }
    return ahead;
  }

  /** The snapshot to answer from, given the version, age and cost of the newest one. */
  async #current(version: number | null, ageMs: number, tookMs: number): Promise<Snapshot> {
    const mine = this.#snapshot;
    if (version === null || ageMs > this.#staleAfter(tookMs)) return this.#take();
    if (mine && mine.version === version) {
      // Stale while revalidating: this answer from the newest snapshot, a later one from a fresher one.
      if (ageMs > this.#oldAfter(tookMs)) void this.#take().catch(() => undefined);
      return mine;
    }
    if (mine && mine.version > version) return mine; // the probe raced a newer take of this process
    return this.#read();
  }

  /** Reads the newest snapshot, which another process took. */
  #read(): Promise<Snapshot> {
    this.#reading ??= this.#pool
      .query<SnapshotRow>({ name: "fg_position_read", text: PG_POSITION_SQL.read })
      .then(({ rows }) => this.#keep(rows[0]!))
      .finally(() => {
        this.#reading = null;
      });
    return this.#reading;
  }

  /** Takes a snapshot (one process at a time), unless another process took a fresh one while this one waited for the lock. */
  #take(): Promise<Snapshot> {
    this.#taking ??= inTransaction(this.#pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1)", [SNAPSHOT_LOCK]);
      const { rows } = await client.query<{ version: number; took_ms: number; age_ms: number }>({ name: "fg_position_age", text: PG_POSITION_SQL.age });
      const other = rows[0];
      // Another process took one while this one waited: it is as good as a new one.
      if (other && Number(other.version) > (this.#snapshot?.version ?? 0) && Number(other.age_ms) <= this.#oldAfter(Number(other.took_ms))) {
        const read = await client.query<SnapshotRow>({ name: "fg_position_read", text: PG_POSITION_SQL.read });
        return this.#keep(read.rows[0]!);
      }
      const taken = await client.query<SnapshotRow>({ name: "fg_position_take", text: PG_POSITION_SQL.take });
      await client.query({ name: "fg_position_took", text: PG_POSITION_SQL.tookMs });
      return this.#keep(taken.rows[0]!);
    }).finally(() => {
      this.#taking = null;
    });
    return this.#taking;
  }

  /** Age past which a snapshot that took `tookMs` is taken again (answering meanwhile). */
  #oldAfter(tookMs: number): number {
    return Math.max(this.#maxAgeMs, this.#costFactor * tookMs);
  }

  /** Age past which a snapshot that took `tookMs` answers no more. */
  #staleAfter(tookMs: number): number {
    return Math.max(this.#maxStaleMs, 2 * this.#costFactor * tookMs);
  }

  /** Keeps a snapshot read from the database, unless a newer one is kept already. */
  #keep(row: SnapshotRow): Snapshot {
    if (this.#snapshot && this.#snapshot.version >= Number(row.version)) return this.#snapshot;
    const owners = new Map<string, OwnerQueue>();
    let from = 0;
    for (const [owner, running, queued] of row.owners) {
      owners.set(owner, { running, queued, from });
      from += queued;
    }
    this.#snapshot = { version: Number(row.version), maxSeq: Number(row.max_seq), owners, seqs: row.seqs };
    return this.#snapshot;
  }

  /** The exact count (reads the jobs ahead: cheap near the front); 0 for a job no longer queued. */
  async #exact(jobId: string): Promise<number> {
    const { rows } = await this.#pool.query<{ position: number }>({ name: "fg_lease_position", text: PG_LEASE_SQL.position, values: [jobId] });
    return rows[0]?.position ?? 0;
  }
}

/**
 * The place of the owner's job of this seq in the snapshot's fair order (as FairQueue.position),
 * or null when the snapshot does not hold it. Its level is its owner's running jobs plus its rank
 * among the owner's queued jobs; every job of a lower level is ahead, and of its own level, the
 * ones submitted before it. O(owners + log n).
 */
function placeOf(snap: Snapshot, owner: string, seq: number): number | null {
  const mine = snap.owners.get(owner);
  if (!mine) return null;
  const seqAt = (q: OwnerQueue, k: number) => Number(snap.seqs.readBigInt64BE((q.from + k) * SEQ_BYTES));
  let lo = 0;
  let hi = mine.queued;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (seqAt(mine, mid) < seq) lo = mid + 1;
    else hi = mid;
  }
  if (lo === mine.queued || seqAt(mine, lo) !== seq) return null;
  const rank = lo;
  const level = mine.running + rank;
  let ahead = rank;
  for (const other of snap.owners.values()) {
    if (other === mine) continue;
    const below = level - other.running; // the other owner's jobs of a lower level
    if (below < 0) continue;
    if (below >= other.queued) {
      ahead += other.queued;
      continue;
    }
    ahead += below;
    if (seqAt(other, below) < seq) ahead++; // its job of the same level, if submitted earlier
  }
  return ahead;
}
