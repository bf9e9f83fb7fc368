// Queue positions from the shared snapshot (src/store/postgres-positions.ts): the fair order of
// one process's queue (src/jobs/fair-queue.ts), a bounded lag, never a step back in time across
// processes, the head always exact, and jobs newer than the snapshot placed at once.
import type pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { FairQueue } from "../../../src/jobs/fair-queue.ts";
import { postgresPool } from "../../../src/store/postgres-pool.ts";
import { QueuePositions, type QueuePositionOptions } from "../../../src/store/postgres-positions.ts";
import { postgresUnavailable, TEST_DATABASE_URL } from "../../postgres/pg.ts";
import { newJob, T0 } from "../helpers.ts";
import { leasedStore } from "./leased-store.ts";

const unavailable = await postgresUnavailable();
const FOREVER = 3_600_000;
const t = leasedStore(unavailable);
let pools: pg.Pool[] = [];

/** A process's view of positions: its own pool and snapshot copy. */
function node(options: QueuePositionOptions): QueuePositions {
  const pool = postgresPool({ url: TEST_DATABASE_URL, schema: t.schema });
  pools.push(pool);
  return new QueuePositions(pool, options);
}

/** Queues jobs of these owners in order, mirrored in a one-process FairQueue. */
async function queue(owners: string[], local: FairQueue): Promise<string[]> {
  const ids: string[] = [];
  for (const owner of owners) {
    const job = await t.store.createJob(newJob({ owner }));
    ids.push(job.id);
    local.push(job.id, owner);
  }
  return ids;
}

/** Claims the next job in the fair order, mirrored in `local`. */
async function claimNext(local: FairQueue): Promise<string> {
  const { job } = (await t.leases.claim("w", 30_000, T0, undefined, []))!;
  local.remove(job.id);
  local.started(job.owner);
  return job.id;
}

// Registered after the store's: runs before its schema is dropped.
afterEach(async () => {
  await Promise.all(pools.map((p) => p.end()));
  pools = [];
});

describe.skipIf(unavailable !== null)("QueuePositions", () => {
  it("a snapshot places every queued job as one process's fair queue does", async () => {
    const local = new FairQueue();
    const ids = await queue(["a", "a", "b", "a", "c", "b", "b", "a", "c", "c", "a", "b", "d", "a", "a"], local);
    await claimNext(local); // a runs one: its level rises
    await claimNext(local);
    const positions = node({ exactBelow: 0, maxAgeMs: FOREVER, maxStaleMs: FOREVER });
    const waiting = ids.filter((id) => local.position(id) !== null);
    expect(await Promise.all(waiting.map((id) => positions.position(id)))).toEqual(waiting.map((id) => local.position(id)));
    expect(await positions.position(ids[0]!)).toBeNull(); // running, not queued
  });

  it("agrees with the fair queue over a larger mix of owners, runs and ends", async () => {
    const local = new FairQueue();
    let state = 7;
    const next = (n: number) => (state = (state * 1103515245 + 12345) % 2 ** 31) % n;
    const ids = await queue(
      Array.from({ length: 80 }, () => `o${next(6)}`),
      local,
    );
    const ran: string[] = [];
    for (let i = 0; i < 12; i++) ran.push(await claimNext(local));
    for (const id of ran.slice(0, 5)) {
      const job = (await t.store.transitionJob(id, ["running"], "succeeded", { completed_at: T0 }))!;
      local.ended(job.owner);
    }
    const positions = node({ exactBelow: 0, maxAgeMs: FOREVER, maxStaleMs: FOREVER });
    const waiting = ids.filter((id) => local.position(id) !== null);
    expect(await Promise.all(waiting.map((id) => positions.position(id)))).toEqual(waiting.map((id) => local.position(id)));
  });

  it("lags the queue by at most its age, never reads higher later, and reads the head exactly", async () => {
    const local = new FairQueue();
    const ids = await queue(
      Array.from({ length: 20 }, () => "solo"),
      local,
    );
    const last = ids[19]!;
    const stale = node({ maxAgeMs: FOREVER, maxStaleMs: FOREVER });
    expect(await stale.position(last)).toBe(19);
    for (let i = 0; i < 5; i++) await claimNext(local);
    // A snapshot that is not old yet still answers: the lag a reader may see.
    expect(await stale.position(last)).toBe(19);
    // The head is counted exactly whatever the snapshot says.
    const head = ids[5]!;
    expect(local.position(head)).toBe(0);
    expect(await stale.position(head)).toBe(0);
    // An old snapshot is taken again: the reader after next sees the queue as it is.
    const fresh = node({ maxAgeMs: 0, maxStaleMs: 0, costFactor: 0 });
    expect(await fresh.position(last)).toBe(14);
  });

  it("a process never answers from an older snapshot than one another process already took", async () => {
    const local = new FairQueue();
    const ids = await queue(
      Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? "x" : "y")),
      local,
    );
    const probe = ids[29]!;
    const lazy = node({ maxAgeMs: FOREVER, maxStaleMs: FOREVER, exactBelow: 0 });
    const eager = node({ maxAgeMs: 0, maxStaleMs: 0, costFactor: 0, exactBelow: 0 });
    const before = await lazy.position(probe);
    expect(before).toBe(local.position(probe));
    for (let i = 0; i < 6; i++) await claimNext(local);
    const after = await eager.position(probe); // takes a new snapshot
    expect(after).toBe(local.position(probe));
    expect(after!).toBeLessThan(before!);
    // The lazy process would keep its copy for an hour, but the probe sees a newer version.
    expect(await lazy.position(probe)).toBe(after);
  });

  it("a job read by the store is placed from the snapshot's stamp its read carried: no read of its own, never an older snapshot", async () => {
    const local = new FairQueue();
    const ids = await queue(
      Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? "x" : "y")),
      local,
    );
    const probe = ids[29]!;
    const lazy = node({ maxAgeMs: FOREVER, maxStaleMs: FOREVER, exactBelow: 0 });
    const eager = node({ maxAgeMs: 0, maxStaleMs: 0, costFactor: 0, exactBelow: 0 });
    const before = await lazy.position(probe, (await t.store.getJob(probe))!); // no snapshot yet: takes one
    expect(before).toBe(local.position(probe));
    const lazyPool = pools[0]!;
    const query = lazyPool.query.bind(lazyPool);
    let reads = 0;
    lazyPool.query = ((...args: Parameters<typeof query>) => {
      reads++;
      return query(...args);
    }) as typeof lazyPool.query;
    expect(await lazy.position(probe, (await t.store.getJob(probe))!)).toBe(before);
    expect(reads).toBe(0); // the stamp names the snapshot it holds: placed without a round trip
    for (let i = 0; i < 6; i++) await claimNext(local);
    const after = await eager.position(probe); // another process takes a new snapshot
    expect(after).toBe(local.position(probe));
    expect(after!).toBeLessThan(before!);
    // The next read of the row carries the newer version: read once, never answered from the old copy.
    expect(await lazy.position(probe, (await t.store.getJob(probe))!)).toBe(after);
    expect(reads).toBe(1);
    // A record read by other means (a listing) carries no stamp: probed as before.
    const [listed] = (await t.store.listJobs("y", { limit: 1 })).jobs;
    expect(await lazy.position(listed!.id, listed)).toBe(local.position(listed!.id));
    expect(reads).toBe(2);
  });

  it("a job submitted after the snapshot is placed at once", async () => {
    const local = new FairQueue();
    await queue(["p", "p", "q", "p"], local);
    const positions = node({ maxAgeMs: FOREVER, maxStaleMs: FOREVER, exactBelow: 0 });
    await positions.position((await queue(["p"], local))[0]!); // a snapshot exists now
    const [late] = await queue(["r"], local); // a new owner: ahead of p's later jobs
    expect(await positions.position(late!)).toBe(local.position(late!));
    const [later] = await queue(["q"], local);
    expect(await positions.position(later!)).toBe(local.position(later!));
    // Placed from the snapshot and the jobs submitted since: no new snapshot was taken for them.
    const [{ version }] = (await pools[0]!.query<{ version: number }>("SELECT version FROM queue_snapshot")).rows as [{ version: number }];
    expect(Number(version)).toBe(1);
  });

  it("a snapshot past its stale bound is never answered from, however long ago the last read was", async () => {
    const local = new FairQueue();
    const ids = await queue(
      Array.from({ length: 12 }, () => "solo"),
      local,
    );
    const positions = node({ maxAgeMs: 0, maxStaleMs: 0, costFactor: 0, exactBelow: 0 });
    expect(await positions.position(ids[11]!)).toBe(11);
    for (let i = 0; i < 3; i++) await claimNext(local);
    // Its copy is the newest version, but old: the read waits for a new snapshot.
    expect(await positions.position(ids[11]!)).toBe(8);
  });

  it("a job canceled after the snapshot reads not queued", async () => {
    const local = new FairQueue();
    const ids = await queue(["a", "a", "a"], local);
    const positions = node({ maxAgeMs: FOREVER, maxStaleMs: FOREVER, exactBelow: 0 });
    expect(await positions.position(ids[2]!)).toBe(2);
    await t.store.transitionJob(ids[2]!, ["queued"], "canceled", { completed_at: T0 });
    expect(await positions.position(ids[2]!)).toBeNull();
  });
});
