// Progress weighted by work: a sampler's steps count, so the fraction and the ETA a client derives
// from it follow the time the run takes, not the number of nodes.
import { describe, expect, it } from "vitest";
import { ProgressTracker } from "../../src/jobs/progress.ts";

describe("ProgressTracker", () => {
  it("weights a node that reports steps by its steps: 92% at step 7357 of 8000 before a save", () => {
    const t = new ProgressTracker();
    t.plan(["1", "2"]);
    t.nodeStart("1", "FlowgateSampler");
    const p = t.step("1", 7357, 8000);
    expect(p.value).toBeCloseTo(7357 / 8001, 6);
    expect(p).toMatchObject({ nodes_done: 0, nodes_total: 2, step: 7357, steps: 8000 });
    t.nodeDone("1");
    t.nodeStart("2", "SaveImage");
    expect(t.nodeDone("2").value).toBeCloseTo(0.999999, 6);
    expect(t.finish().value).toBe(1);
  });

  it("counts a node without steps as one unit, cached ones as done, and never goes back", () => {
    const t = new ProgressTracker();
    t.plan(["a", "b", "c", "d"]);
    expect(t.cached(["a"]).value).toBe(0.25);
    t.nodeStart("b", "ImageInvert");
    expect(t.nodeDone("b").value).toBe(0.5);
    t.nodeStart("c", "FlowgateSampler");
    // The sampler's 100 steps enlarge the total: the fraction holds rather than going back.
    const values = [t.step("c", 1, 100).value];
    for (let s = 2; s <= 100; s++) values.push(t.step("c", s, 100).value);
    for (let i = 1; i < values.length; i++) expect(values[i]!).toBeGreaterThanOrEqual(values[i - 1]!);
    expect(values[0]).toBe(0.5);
    expect(values.at(-1)).toBeCloseTo(102 / 103, 6);
  });
});
