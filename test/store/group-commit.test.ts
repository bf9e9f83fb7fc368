// The group commit both stores batch their submissions with: one commit per turn, batches in a row,
// one failure kept to its own submission.
import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../src/store/group-commit.ts";
import type { Outcomes } from "../../src/store/group-commit.ts";

describe("GroupCommit", () => {
  it("commits the submissions of one turn together, in order", async () => {
    const commits: Array<{ items: number[]; batched: boolean }> = [];
    const group = new GroupCommit<number, number>((items, batched) => {
      commits.push({ items, batched });
      return items.map((item) => ({ status: "fulfilled", value: item * 10 }));
    });
    expect(await Promise.all([group.submit(1), group.submit(2), group.submit(3)])).toEqual([10, 20, 30]);
    expect(commits).toEqual([{ items: [1, 2, 3], batched: true }]);
  });

  it("gathers what arrives while a batch commits into the next one", async () => {
    const commits: number[][] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const group = new GroupCommit<number, number>(async (items) => {
      commits.push(items);
      if (commits.length === 1) await held;
      return items.map((item) => ({ status: "fulfilled", value: item }));
    });
    const first = group.submit(1);
    await new Promise((resolve) => setImmediate(resolve)); // the first batch is committing now
    expect(commits).toEqual([[1]]);
    const later = [group.submit(2), group.submit(3)];
    await new Promise((resolve) => setImmediate(resolve)); // their batch waits for the first one's end
    later.push(group.submit(4)); // a later turn, still before the first batch ended
    release();
    expect(await Promise.all([first, ...later])).toEqual([1, 2, 3, 4]);
    expect(commits).toEqual([[1], [2, 3, 4]]);
  });

  it("keeps a refused submission's outcome to itself", async () => {
    const group = new GroupCommit<number, number>(
      (items): Outcomes<number> => items.map((item) => (item === 2 ? { status: "rejected", reason: new Error("two") } : { status: "fulfilled", value: item })),
    );
    const results = await Promise.allSettled([group.submit(1), group.submit(2), group.submit(3)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  });

  it("retries each submission alone when the batch fails as a whole, failing only the bad one", async () => {
    const commits: Array<{ items: number[]; batched: boolean }> = [];
    const group = new GroupCommit<number, number>((items, batched) => {
      commits.push({ items, batched });
      if (items.includes(2)) throw new Error("bad job");
      return items.map((item) => ({ status: "fulfilled", value: item }));
    });
    const results = await Promise.allSettled([group.submit(1), group.submit(2), group.submit(3)]);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual([1, "bad job", 3]);
    expect(commits).toEqual([
      { items: [1, 2, 3], batched: true },
      { items: [1], batched: false },
      { items: [2], batched: false },
      { items: [3], batched: false },
    ]);
  });

  it("flush commits what waits at once and resolves when it settled", async () => {
    const commits: number[][] = [];
    const group = new GroupCommit<number, number>((items) => {
      commits.push(items);
      return items.map((item) => ({ status: "fulfilled", value: item }));
    });
    const submitted = group.submit(7);
    await group.flush();
    expect(commits).toEqual([[7]]);
    expect(await submitted).toBe(7);
  });
});
