// Graph files given to the suite (--slow-workflow and the like): the $NONCE substitution, and the
// slow graph shipped for a ComfyUI, which has no FlowgateDelay.
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadGraph, withNonce, type Graph } from "../../conformance/checks/support/workflows.ts";
import { newEngine } from "../engine/helpers.ts";

const SHIPPED_SLOW = resolve(import.meta.dirname, "../../conformance/workflows/comfyui-slow.json");

describe("withNonce", () => {
  const graph: Graph = {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: "$NONCE" } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "run_$NONCE" } },
  };

  it("puts a number below 2^24 where a value is $NONCE alone, and its digits inside longer strings", () => {
    for (let i = 0; i < 50; i++) {
      const g = withNonce(graph);
      const color = g["1"]!.inputs.color;
      expect(typeof color).toBe("number");
      expect(Number.isInteger(color) && (color as number) >= 0 && (color as number) < 2 ** 24).toBe(true);
      expect(g["2"]!.inputs.filename_prefix).toBe(`run_${color as number}`);
    }
  });

  it("draws a new value per call and leaves the given graph as it was", () => {
    const colors = new Set(Array.from({ length: 20 }, () => withNonce(graph)["1"]!.inputs.color));
    expect(colors.size).toBeGreaterThan(1);
    expect(graph["1"]!.inputs.color).toBe("$NONCE");
  });
});

describe("conformance/workflows/comfyui-slow.json", () => {
  it("is a graph of core nodes that validates, with one output node, once its nonce is in", () => {
    const raw = loadGraph(SHIPPED_SLOW);
    expect(JSON.stringify(raw)).toContain('"$NONCE"');
    // The embedded engine has ComfyUI's definitions and limits for these nodes (EmptyImage's color
    // at most 0xFFFFFF, ImageBlur's radius at most 31).
    const result = newEngine().validateSync(withNonce(raw));
    expect(result.node_errors).toEqual({});
    expect(result.output_nodes).toHaveLength(1);
  });
});
