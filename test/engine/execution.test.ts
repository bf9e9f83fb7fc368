import { describe, expect, it } from "vitest";
import { EngineError, EngineValidationError, ExecutionCancelledError, MissingModelError, type NodeDefinition } from "../../src/engine/index.ts";
import { newEngine, node, pngOf, recorder } from "./helpers.ts";
import { reasons } from "../node-errors.ts";

const ASSET_ID = "0190c6a2-7e1f-7b3c-9d2e-1a2b3c4d5e6f";

/** A test-only node that fails the way `fail` says. */
function failingNode(name: string, fail: () => never): NodeDefinition {
  return {
    name,
    display_name: name,
    category: "test",
    description: "",
    python_module: "test",
    input: { required: { text: ["STRING", {}] } },
    output: ["STRING"],
    output_node: false,
    run: () => fail(),
  };
}

/** No absolute path (POSIX, Windows or file URL) anywhere in the text. */
function expectNoPaths(text: string | null) {
  expect(text).not.toBeNull();
  expect(text).not.toContain("file://");
  expect(text).not.toContain(process.cwd());
  expect(text).not.toMatch(/(^|[\s(])\/[\w.@-]+\//m);
  expect(text).not.toMatch(/[A-Za-z]:\\/);
}

describe("execution order and events", () => {
  it("runs only output nodes and their ancestors, dependencies first", async () => {
    const engine = newEngine();
    const { rec, options } = recorder();
    const graph = {
      "1": node("PrimitiveString", { value: "a" }),
      "2": node("StringConcatenate", { string_a: ["1", 0], string_b: "b", delimiter: "" }),
      "3": node("PreviewAny", { source: ["2", 0] }),
      "4": node("PrimitiveString", { value: "dangling" }),
    };
    const result = await engine.execute(graph, options);
    expect(rec.start).toEqual({ nodes: ["1", "2", "3"], cached: [], steps: {} });
    expect(rec.started).toEqual(["1", "2", "3"]);
    expect(rec.events.slice(0, 2)).toEqual(["start", "cached:"]);
    expect(rec.events.indexOf("output:3")).toBeLessThan(rec.events.indexOf("done:3"));
    expect(rec.done.find((d) => d.node_id === "3")).toEqual({
      node_id: "3",
      class_type: "PreviewAny",
      ui: expect.objectContaining({ text: ["ab"] }),
      cached: false,
    });
    expect(result.executed).toEqual(["1", "2", "3"]);
    expect(result.ui["3"]).toEqual({ text: ["ab"] });
    expect(result.outputs).toEqual([expect.objectContaining({ node_id: "3", type: "text", size_bytes: 2 })]);
  });

  it("reports sampler steps up front, then per-step progress and previews", async () => {
    const engine = newEngine();
    const { rec, options } = recorder();
    const graph = {
      "1": node("FlowgateSampler", { seed: 3, steps: 4, width: 16, height: 16 }),
      "2": node("PreviewImage", { images: ["1", 0] }),
    };
    await engine.execute(graph, options);
    expect(rec.start!.steps).toEqual({ "1": 4 });
    expect(rec.progress).toEqual([1, 2, 3, 4].map((value) => ({ node_id: "1", value, max: 4 })));
    expect(rec.previews).toHaveLength(4);
    expect(rec.previews[0]).toMatchObject({ node_id: "1", content_type: "image/jpeg" });
  });

  it("awaits onOutput before going on", async () => {
    const engine = newEngine();
    const events: string[] = [];
    const graph = {
      "1": node("FlowgatePrint", { text: "first" }),
      "2": node("FlowgatePrint", { text: ["1", 0] }),
    };
    await engine.execute(graph, {
      onNodeStart: (e) => void events.push(`start:${e.node_id}`),
      onOutput: async (o) => {
        events.push(`output:${o.node_id}`);
        // Hold the commit for a few turns of the event loop; a non-awaiting engine would move on.
        for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
        events.push(`committed:${o.node_id}`);
      },
    });
    expect(events).toEqual(["start:1", "output:1", "committed:1", "start:2", "output:2", "committed:2"]);
  });

  it("names files ComfyUI-style, counting per prefix within the run", async () => {
    const engine = newEngine();
    const { rec, options } = recorder();
    const graph = {
      "1": node("EmptyImage", { width: 4, height: 4, batch_size: 2, color: 0 }),
      "2": node("SaveImage", { images: ["1", 0], filename_prefix: "shots/ComfyUI" }),
      "3": node("EmptyImage", { width: 4, height: 4, batch_size: 1, color: 255 }),
      "4": node("SaveImage", { images: ["3", 0], filename_prefix: "shots/ComfyUI" }),
    };
    await engine.execute(graph, options);
    const names = rec.outputs.map((o) => `${o.subfolder}/${o.name}`).sort();
    expect(names).toEqual(["shots/ComfyUI_00001_.png", "shots/ComfyUI_00002_.png", "shots/ComfyUI_00003_.png"]);
    const ui = rec.done.find((d) => d.node_id === "4")!.ui!;
    expect(ui.images).toEqual([{ filename: expect.stringMatching(/^ComfyUI_0000[13]_\.png$/), subfolder: "shots", type: "output" }]);
  });

  it("writes standard output to the run's own sink, in order", async () => {
    const engine = newEngine();
    const graph = (t: string) => ({
      "1": node("FlowgatePrint", { text: `${t}1` }),
      "2": node("FlowgatePrint", { text: ["1", 0] }),
      "3": node("StringConcatenate", { string_a: ["2", 0], string_b: "+", delimiter: "" }),
      "4": node("FlowgatePrint", { text: ["3", 0] }),
    });
    const a = recorder();
    const b = recorder();
    await Promise.all([engine.execute(graph("a"), a.options), engine.execute(graph("b"), b.options)]);
    expect(a.rec.logs.join("")).toBe("a1\na1\na1+\n");
    expect(b.rec.logs.join("")).toBe("b1\nb1\nb1+\n");
  });

  it("runs a 1,000-node chain", async () => {
    const engine = newEngine();
    const graph: Record<string, unknown> = { "0": node("PrimitiveString", { value: "" }) };
    for (let i = 1; i <= 1000; i++) graph[String(i)] = node("StringConcatenate", { string_a: [String(i - 1), 0], string_b: "x", delimiter: "" });
    graph.out = node("PreviewAny", { source: ["1000", 0] });
    const result = await engine.execute(graph);
    expect(result.executed).toHaveLength(1002);
    expect(result.ui.out).toEqual({ text: ["x".repeat(1000)] });
  });
});

describe("parallel branches", () => {
  it("overlap while nodes wait: both delays start before either finishes", async () => {
    const engine = newEngine();
    const { rec, options } = recorder();
    const graph = {
      "1": node("FlowgateDelay", { value: "left", seconds: 0.2 }),
      "2": node("PreviewAny", { source: ["1", 0] }),
      "3": node("FlowgateDelay", { value: "right", seconds: 0.2 }),
      "4": node("PreviewAny", { source: ["3", 0] }),
    };
    await engine.execute(graph, options);
    const firstDone = Math.min(rec.events.indexOf("done:1"), rec.events.indexOf("done:3"));
    expect(rec.events.indexOf("node:1")).toBeLessThan(firstDone);
    expect(rec.events.indexOf("node:3")).toBeLessThan(firstDone);
  });

  it("stay sequential with maxConcurrency 1 (the control for the test above)", async () => {
    const engine = newEngine({ maxConcurrency: 1 });
    const { rec, options } = recorder();
    const graph = {
      "1": node("FlowgateDelay", { value: "left", seconds: 0.05 }),
      "2": node("PreviewAny", { source: ["1", 0] }),
      "3": node("FlowgateDelay", { value: "right", seconds: 0.05 }),
      "4": node("PreviewAny", { source: ["3", 0] }),
    };
    await engine.execute(graph, options);
    expect(rec.events.indexOf("node:3")).toBeGreaterThan(rec.events.indexOf("done:1"));
  });
});

describe("failures", () => {
  it("maps a node's exception to node_execution_error with node, class and a path-free traceback", async () => {
    const engine = newEngine({
      extraNodes: [
        failingNode("Boom", () => {
          throw new Error("kaboom");
        }),
      ],
    });
    const graph = {
      "1": node("Boom", { text: "x" }),
      "2": node("PreviewAny", { source: ["1", 0] }),
    };
    const err = await engine.execute(graph).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    const job = (err as EngineError).jobError;
    expect(job).toMatchObject({ code: "node_execution_error", message: "kaboom", node_id: "1", class_type: "Boom" });
    expect(job.traceback).toContain("kaboom");
    expect(job.traceback).not.toContain("execution.test.ts");
    expectNoPaths(job.traceback);
  });

  it("maps missing models and allocation failures to their codes", async () => {
    const engine = newEngine({
      extraNodes: [
        failingNode("NeedsModel", () => {
          throw new MissingModelError("model.safetensors is not installed");
        }),
        failingNode("TooBig", () => {
          throw new RangeError("Array buffer allocation failed");
        }),
      ],
    });
    const run = (cls: string) =>
      engine.execute({ "1": node(cls, { text: "x" }), "2": node("PreviewAny", { source: ["1", 0] }) }).catch((e: EngineError) => e.jobError.code);
    expect(await run("NeedsModel")).toBe("missing_model");
    expect(await run("TooBig")).toBe("out_of_memory");
  });

  it("invalid_input when a node rejects its inputs at run time", async () => {
    const engine = newEngine();
    const graph = {
      "1": node("EmptyImage", { width: 2, height: 2, batch_size: 1, color: 0 }),
      "2": node("ImageToMask", { image: ["1", 0], channel: "alpha" }),
      "3": node("MaskToImage", { mask: ["2", 0] }),
      "4": node("PreviewImage", { images: ["3", 0] }),
    };
    const err = (await engine.execute(graph).catch((e: unknown) => e)) as EngineError;
    expect(err.jobError).toMatchObject({ code: "invalid_input", node_id: "2", class_type: "ImageToMask" });
    expectNoPaths(err.jobError.traceback);
  });

  it("keeps outputs committed before a failure and reports nothing after it", async () => {
    const engine = newEngine({
      maxConcurrency: 1,
      extraNodes: [
        failingNode("Boom", () => {
          throw new Error("late");
        }),
      ],
    });
    const { rec, options } = recorder();
    const graph = {
      "1": node("FlowgatePrint", { text: "early" }),
      "2": node("Boom", { text: ["1", 0] }),
      "3": node("PreviewAny", { source: ["2", 0] }),
    };
    await expect(engine.execute(graph, options)).rejects.toBeInstanceOf(EngineError);
    expect(rec.outputs.map((o) => o.node_id)).toEqual(["1"]);
    expect(rec.started).toEqual(["1", "2"]);
    expect(rec.done.map((d) => d.node_id)).toEqual(["1"]);
  });

  it("rejects a graph that does not validate with EngineValidationError (invalid_input)", async () => {
    const err = await newEngine()
      .execute({ "1": node("Nope"), "2": node("PreviewAny", { source: "x" }) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineValidationError);
    expect((err as EngineValidationError).code).toBe("invalid_input");
    expect(reasons((err as EngineValidationError).validation.node_errors)).toEqual({ "1": [{ field: "class_type", reason: "unknown_class" }] });
  });

  it("passes a callback's own error through unchanged", async () => {
    const mine = new Error("commit failed");
    const graph = { "1": node("FlowgatePrint", { text: "x" }) };
    await expect(newEngine().execute(graph, { onOutput: () => Promise.reject(mine) })).rejects.toBe(mine);
  });

  it("fails with code timeout past timeoutMs", async () => {
    const graph = { "1": node("FlowgateDelay", { value: "x", seconds: 3600 }), "2": node("PreviewAny", { source: ["1", 0] }) };
    const err = (await newEngine()
      .execute(graph, { timeoutMs: 30 })
      .catch((e: unknown) => e)) as EngineError;
    expect(err).toBeInstanceOf(EngineError);
    expect(err.jobError).toMatchObject({ code: "timeout", node_id: "1", class_type: "FlowgateDelay" });
  });
});

describe("cancellation", () => {
  it("stops a sampler mid-step within a second and rejects with ExecutionCancelledError", async () => {
    const controller = new AbortController();
    let abortedAt = 0;
    const { rec, options } = recorder({
      signal: controller.signal,
      onProgress: (p) => {
        rec.progress.push(p);
        if (p.value === 3) {
          abortedAt = performance.now();
          controller.abort();
        }
      },
    });
    const graph = {
      "1": node("FlowgateSampler", { seed: 5, steps: 10000, width: 64, height: 64 }),
      "2": node("SaveImage", { images: ["1", 0], filename_prefix: "x" }),
    };
    const err = await newEngine()
      .execute(graph, options)
      .catch((e: unknown) => e);
    const stoppedAfter = performance.now() - abortedAt;
    expect(err).toBeInstanceOf(ExecutionCancelledError);
    expect((err as ExecutionCancelledError).node_id).toBe("1");
    expect(stoppedAfter).toBeLessThan(1000);
    expect(rec.progress.length).toBeLessThan(10000);
    expect(rec.outputs).toHaveLength(0);
    expect(rec.done.map((d) => d.node_id)).not.toContain("1");
  });

  it("stops inside a long CPU-bound node (a large blur) within a second", async () => {
    const controller = new AbortController();
    let startedAt = 0;
    const graph = {
      "1": node("EmptyImage", { width: 2048, height: 2048, batch_size: 1, color: 0x808080 }),
      "2": node("ImageBlur", { image: ["1", 0], blur_radius: 31, sigma: 5 }),
      "3": node("PreviewImage", { images: ["2", 0] }),
    };
    const err = await newEngine()
      .execute(graph, {
        signal: controller.signal,
        onNodeStart: (e) => {
          if (e.node_id !== "2") return;
          startedAt = performance.now();
          // Fires only if the blur lets the event loop run while it computes.
          setTimeout(() => controller.abort(), 20);
        },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExecutionCancelledError);
    expect((err as ExecutionCancelledError).node_id).toBe("2");
    expect(performance.now() - startedAt).toBeLessThan(1000);
  });

  it("interrupts a waiting delay", async () => {
    const controller = new AbortController();
    const graph = { "1": node("FlowgateDelay", { value: 1, seconds: 3600 }), "2": node("PreviewAny", { source: ["1", 0] }) };
    const run = newEngine().execute(graph, { signal: controller.signal, onNodeStart: () => controller.abort() });
    await expect(run).rejects.toBeInstanceOf(ExecutionCancelledError);
  });

  it("does nothing when the signal is already aborted", async () => {
    const { rec, options } = recorder({ signal: AbortSignal.abort() });
    await expect(newEngine().execute({ "1": node("FlowgatePrint", { text: "x" }) }, options)).rejects.toBeInstanceOf(ExecutionCancelledError);
    expect(rec.events).toEqual([]);
  });
});

describe("file inputs", () => {
  it("reads hosted uploads through the per-run resolver", async () => {
    const png = await pngOf(1, 1, 3, [255, 0, 0]);
    const asked: string[] = [];
    const { rec, options } = recorder({
      resolveUpload: async (name) => {
        asked.push(name);
        return { bytes: png, hash: "blake3:aa" };
      },
    });
    const graph = { "1": node("LoadImage", { image: "cat.png" }), "2": node("SaveImage", { images: ["1", 0], filename_prefix: "p" }) };
    await newEngine().execute(graph, options);
    expect(asked).toEqual(["cat.png"]);
    expect(rec.outputs).toHaveLength(1);
  });

  it("fails with invalid_input when the caller has no such upload", async () => {
    const graph = { "1": node("LoadImage", { image: "missing.png" }), "2": node("PreviewImage", { images: ["1", 0] }) };
    const err = (await newEngine()
      .execute(graph, { resolveUpload: async () => null })
      .catch((e: unknown) => e)) as EngineError;
    expect(err.jobError).toMatchObject({ code: "invalid_input", node_id: "1", class_type: "LoadImage", message: "Invalid image file: missing.png" });
  });

  it("reads core/ASSET references through resolveAsset and fails cleanly when it throws", async () => {
    const png = await pngOf(1, 1, 4, [0, 0, 255, 128]);
    const refs: unknown[] = [];
    const asset = { __type: "core/ASSET", info: { id: ASSET_ID, file_path: "blue.png" } };
    const graph = {
      "1": node("LoadImage", { image: asset }),
      "2": node("PreviewImage", { images: ["1", 0] }),
      "3": node("MaskToImage", { mask: ["1", 1] }),
      "4": node("PreviewImage", { images: ["3", 0] }),
    };
    await expect(
      newEngine().execute(graph, {
        resolveAsset: async (ref) => {
          refs.push(ref);
          return { bytes: png, hash: "blake3:bb", content_type: "image/png" };
        },
      }),
    ).resolves.toBeDefined();
    expect(refs).toEqual([{ id: ASSET_ID, file_path: "blue.png" }]);
    const err = (await newEngine()
      .execute(graph, { resolveAsset: () => Promise.reject(new Error("/srv/data/blobs/ab gone")) })
      .catch((e: unknown) => e)) as EngineError;
    expect(err.jobError).toMatchObject({ code: "invalid_input", node_id: "1" });
    expect(err.jobError.message).not.toContain("/srv");
  });
});
