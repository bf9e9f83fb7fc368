// The batching of point reads under the PostgreSQL store's getJob: one statement per turn, and a
// read asked for while a batch is out never answered from that batch.
import { describe, expect, it } from "vitest";
import { BatchedReads } from "../../src/store/batched-reads.ts";

/** A read function whose statements the test answers one by one. */
function heldReads() {
  const sent: Array<{ keys: string[]; answer: (values: Map<string, number>) => void; fail: (error: Error) => void }> = [];
  const reads = new BatchedReads<string, number>(
    (keys) =>
      new Promise((resolve, reject) => {
        sent.push({ keys, answer: resolve, fail: reject });
      }),
    1,
  );
  return { reads, sent };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("BatchedReads", () => {
  it("reads the keys of one turn in one statement, each key once, every caller answered", async () => {
    const batches: string[][] = [];
    const reads = new BatchedReads<string, number>(async (keys) => {
      batches.push(keys);
      return new Map(keys.filter((k) => k !== "missing").map((k) => [k, k.length]));
    });
    const answers = await Promise.all([reads.get("a"), reads.get("bb"), reads.get("a"), reads.get("missing")]);
    expect(answers).toEqual([1, 2, 1, undefined]);
    expect(batches).toEqual([["a", "bb", "missing"]]);
  });

  it("sends a read asked for while a batch is out in a later statement, never answering it from that batch", async () => {
    const { reads, sent } = heldReads();
    const first = reads.get("a");
    await turn();
    expect(sent.map((s) => s.keys)).toEqual([["a"]]);
    // Asked for after the first statement went out (a write may have committed since): not joined to it.
    const second = reads.get("a");
    const third = reads.get("b");
    await turn();
    expect(sent).toHaveLength(1); // one statement out at a time here: the next waits for it
    sent[0]!.answer(new Map([["a", 1]]));
    expect(await first).toBe(1);
    await turn();
    expect(sent.map((s) => s.keys)).toEqual([["a"], ["a", "b"]]);
    sent[1]!.answer(
      new Map([
        ["a", 2],
        ["b", 3],
      ]),
    );
    expect(await Promise.all([second, third])).toEqual([2, 3]);
  });

  it("fails only the reads of the statement that failed", async () => {
    const { reads, sent } = heldReads();
    const first = reads.get("a");
    await turn();
    const second = reads.get("b");
    sent[0]!.fail(new Error("connection lost"));
    await expect(first).rejects.toThrow("connection lost");
    await turn();
    sent[1]!.answer(new Map([["b", 7]]));
    expect(await second).toBe(7);
  });

  it("keeps up to maxInFlight statements out at once", async () => {
    const sent: string[][] = [];
    const pending: Array<() => void> = [];
    const reads = new BatchedReads<string, number>(
      (keys) =>
        new Promise((resolve) => {
          sent.push(keys);
          pending.push(() => resolve(new Map(keys.map((k) => [k, 0]))));
        }),
      2,
    );
    const all = [reads.get("a")];
    await turn();
    all.push(reads.get("b"));
    await turn();
    all.push(reads.get("c"), reads.get("d"));
    await turn();
    expect(sent).toEqual([["a"], ["b"]]);
    pending[0]!();
    await all[0];
    await turn();
    expect(sent).toEqual([["a"], ["b"], ["c", "d"]]);
    pending[1]!();
    pending[2]!();
    expect(await Promise.all(all)).toEqual([0, 0, 0, 0]);
  });
});
