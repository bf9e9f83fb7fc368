// The dispatcher's in-memory queue: FIFO order, removal anywhere, O(log n) positions.
import { describe, expect, it } from "vitest";
import { FifoQueue } from "../../src/jobs/fifo-queue.ts";

describe("FifoQueue", () => {
  it("keeps FIFO positions through removals anywhere, and refuses a job twice", () => {
    const q = new FifoQueue();
    for (const id of ["a", "b", "c", "d"]) expect(q.push(id)).toBe(true);
    expect(q.push("b")).toBe(false);
    expect(q.size).toBe(4);
    expect(["a", "b", "c", "d"].map((id) => q.position(id))).toEqual([0, 1, 2, 3]);
    expect(q.remove("b")).toBe(true);
    expect(q.remove("b")).toBe(false);
    expect(q.position("b")).toBeNull();
    expect(q.position("d")).toBe(2);
    expect(q.remove("a")).toBe(true);
    expect(q.peek()).toBe("c");
    expect(q.has("a")).toBe(false);
    expect(q.size).toBe(2);
  });

  it("compacts when most slots are dead, keeping order and positions", () => {
    const q = new FifoQueue();
    const ids = Array.from({ length: 5000 }, (_, i) => `j${i}`);
    for (const id of ids) q.push(id);
    // Remove every job but each seventh, from the front, so compaction runs several times.
    for (const [i, id] of ids.entries()) if (i % 7 !== 0) q.remove(id);
    const left = ids.filter((_, i) => i % 7 === 0);
    expect(q.size).toBe(left.length);
    expect(left.map((id) => q.position(id))).toEqual(left.map((_, i) => i));
    expect(q.peek()).toBe("j0");
    expect([...q.entries()]).toEqual(left);
    q.push("late");
    expect(q.position("late")).toBe(left.length);
  });
});
