// The fair queue: accounts with waiting jobs share the slots (fewest running first, then
// submission order), and every position counts the jobs that start before it in that order.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FairQueue } from "../../src/jobs/fair-queue.ts";
import { FifoQueue } from "../../src/jobs/fifo-queue.ts";

/** The start order by brute force: each waiting job's level is its owner's running count plus its rank among the owner's. */
function expectedOrder(jobs: Array<{ id: string; owner: string }>, running: Map<string, number>): string[] {
  const rank = new Map<string, number>();
  const levelled = jobs.map((job, seq) => {
    const r = rank.get(job.owner) ?? 0;
    rank.set(job.owner, r + 1);
    return { id: job.id, level: (running.get(job.owner) ?? 0) + r, seq };
  });
  return levelled.sort((a, b) => a.level - b.level || a.seq - b.seq).map((j) => j.id);
}

describe("FairQueue", () => {
  it("an account's job is not held behind another account's backlog", () => {
    const q = new FairQueue();
    for (let i = 0; i < 12; i++) q.push(`a${i}`, "A");
    q.started("A");
    q.started("A");
    q.push("b0", "B");
    expect(q.position("b0")).toBe(0);
    expect(q.heads()[0]).toEqual({ id: "b0", owner: "B" });
    expect(q.position("a0")).toBe(1);
    expect(q.position("a11")).toBe(12);
  });

  it("starting jobs in head order yields the positions' order, round robin between accounts", () => {
    const q = new FairQueue();
    const jobs = ["a0", "a1", "a2", "b0", "b1", "c0"].map((id) => ({ id, owner: id[0]! }));
    for (const j of jobs) q.push(j.id, j.owner);
    const byPosition = jobs.map((j) => j.id).sort((x, y) => q.position(x)! - q.position(y)!);
    const started: string[] = [];
    while (q.size > 0) {
      const { id, owner } = q.heads()[0]!;
      q.remove(id);
      q.started(owner);
      started.push(id);
    }
    expect(started).toEqual(["a0", "b0", "c0", "a1", "b1", "a2"]);
    expect(byPosition).toEqual(started);
  });

  it("positions match the brute-force order through any pushes, removals, starts and ends", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("push" as const), owner: fc.constantFrom("A", "B", "C", "D") }),
      fc.record({ kind: fc.constant("remove" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("start" as const) }),
      fc.record({ kind: fc.constant("end" as const), owner: fc.constantFrom("A", "B", "C", "D") }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const q = new FairQueue();
        let waiting: Array<{ id: string; owner: string }> = [];
        const running = new Map<string, number>();
        let n = 0;
        for (const o of ops) {
          if (o.kind === "push") {
            const id = `j${n++}`;
            q.push(id, o.owner);
            waiting.push({ id, owner: o.owner });
          } else if (o.kind === "remove" && waiting.length > 0) {
            const victim = waiting[o.pick % waiting.length]!;
            q.remove(victim.id);
            waiting = waiting.filter((j) => j !== victim);
          } else if (o.kind === "start" && waiting.length > 0) {
            const { id, owner } = q.heads()[0]!;
            expect(id).toBe(expectedOrder(waiting, running)[0]);
            q.remove(id);
            q.started(owner);
            running.set(owner, (running.get(owner) ?? 0) + 1);
            waiting = waiting.filter((j) => j.id !== id);
          } else if (o.kind === "end" && (running.get(o.owner) ?? 0) > 0) {
            q.ended(o.owner);
            running.set(o.owner, running.get(o.owner)! - 1);
          }
          const order = expectedOrder(waiting, running);
          expect(waiting.map((j) => q.position(j.id))).toEqual(waiting.map((j) => order.indexOf(j.id)));
          expect(q.size).toBe(waiting.length);
        }
      }),
      { numRuns: 200, seed: 19 },
    );
  });
});

describe("FifoQueue.at", () => {
  it("finds the job with k jobs ahead, through removals and compaction", () => {
    const q = new FifoQueue();
    const ids = Array.from({ length: 3000 }, (_, i) => `j${i}`);
    for (const id of ids) q.push(id);
    for (const [i, id] of ids.entries()) if (i % 5 !== 0) q.remove(id);
    const left = ids.filter((_, i) => i % 5 === 0);
    expect(left.map((_, k) => q.at(k))).toEqual(left);
    expect(q.at(left.length)).toBeUndefined();
    expect(q.at(-1)).toBeUndefined();
  });
});
