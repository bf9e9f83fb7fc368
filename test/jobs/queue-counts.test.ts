// SharedQueueCounts: the position of a new job from per-owner counts equals the fair queue's own.
import { describe, expect, it } from "vitest";
import { FairQueue } from "../../src/jobs/fair-queue.ts";
import { SharedQueueCounts } from "../../src/jobs/queue-counts.ts";
import type { OwnerCounts } from "../../src/store/job-leases.ts";

/** A deterministic pseudo-random sequence. */
function rng(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

function countsOf(q: FairQueue, owners: string[]): OwnerCounts[] {
  return owners.map((owner) => ({ owner, queued: q.waiting(owner), running: q.running(owner) }));
}

describe("SharedQueueCounts", () => {
  it("gives a new job the position the fair queue gives it, from counts read before and this node's submissions since", async () => {
    const random = rng(7);
    const owners = ["a", "b", "c", "d"];
    for (let round = 0; round < 40; round++) {
      const q = new FairQueue();
      let n = 0;
      for (const o of owners) for (let r = Math.floor(random() * 3); r > 0; r--) q.started(o);
      for (let i = Math.floor(random() * 12); i > 0; i--) q.push(`j${n++}`, owners[Math.floor(random() * 4)]!);
      let clock = 0;
      const counts = new SharedQueueCounts(
        async () => countsOf(q, owners),
        200,
        () => clock,
      );
      // Several submissions after one read: the counts are not read again (fresh enough).
      for (let i = 0; i < 5; i++) {
        const owner = owners[Math.floor(random() * 4)]!;
        const id = `j${n++}`;
        q.push(id, owner);
        clock += 1;
        const got = await counts.positionOfNew(owner);
        expect(got, `round ${round}, submission ${i}`).toBe(q.position(id));
      }
    }
  });

  it("reads the counts again once they are older than the bound, and no more often", async () => {
    let reads = 0;
    let clock = 0;
    const counts = new SharedQueueCounts(
      async () => {
        reads++;
        return [{ owner: "a", queued: 3, running: 1 }];
      },
      200,
      () => clock,
    );
    expect(await counts.positionOfNew("a")).toBe(2); // read after its commit: it is one of the 3
    clock = 100;
    await counts.positionOfNew("a");
    expect(reads).toBe(1);
    clock = 301;
    await counts.positionOfNew("a"); // answered from the old counts; a read starts
    await new Promise((r) => setImmediate(r));
    expect(reads).toBe(2);
    expect(await counts.positionOfNew("a")).toBe(3); // one more than the (unchanged) counts read: a submission since
  });

  it("reads the counts again before answering once a change was heard (a start, an end, another node's submissions)", async () => {
    const state = { queued: 1, running: 0 };
    let reads = 0;
    const counts = new SharedQueueCounts(
      async () => {
        reads++;
        return [{ owner: "a", ...state }];
      },
      60_000,
      () => 0,
    );
    expect(await counts.positionOfNew("a")).toBe(0);
    state.queued = 2; // a second submission, committed here
    expect(await counts.positionOfNew("a")).toBe(1); // from the old counts and this node's submission
    state.queued = 1; // the first job started
    state.running = 1;
    counts.changed();
    state.queued = 2; // and a third submission came, here
    expect(await counts.positionOfNew("a")).toBe(1);
    expect(reads).toBe(2);
  });
});
