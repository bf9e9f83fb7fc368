// Progress as the contract defines it (PRG-2): weighted by node count and sampler step, so the
// value is (nodes done + step / steps of the node running) / nodes, and it never goes back.
import { describe, expect, it } from "vitest";
import { ProgressTracker } from "../../src/jobs/progress.ts";

describe("ProgressTracker", () => {
  it("weights by node count and the running node's steps: 46% at step 7357 of 8000 before a save", () => {
    const t = new ProgressTracker();
    t.plan(["1", "2"]);
    t.nodeStart("1", "FlowgateSampler");
    const p = t.step("1", 7357, 8000);
    expect(p.value).toBeCloseTo((0 + 7357 / 8000) / 2, 6);
    expect(p).toMatchObject({ nodes_done: 0, nodes_total: 2, step: 7357, steps: 8000 });
    t.nodeDone("1");
    t.nodeStart("2", "SaveImage");
    expect(t.nodeDone("2").value).toBeLessThanOrEqual(1);
    expect(t.finish().value).toBe(1);
  });

  it("counts cached nodes as done and never goes back", () => {
    const t = new ProgressTracker();
    t.plan(["a", "b", "c", "d"]);
    expect(t.cached(["a"]).value).toBe(0.25);
    t.nodeStart("b", "ImageInvert");
    expect(t.nodeDone("b").value).toBe(0.5);
    t.nodeStart("c", "FlowgateSampler");
    const values = [t.step("c", 1, 100).value];
    for (let s = 2; s <= 100; s++) values.push(t.step("c", s, 100).value);
    for (let i = 1; i < values.length; i++) expect(values[i]!).toBeGreaterThanOrEqual(values[i - 1]!);
    expect(values.at(-1)).toBeCloseTo(0.75, 6);
  });
});
