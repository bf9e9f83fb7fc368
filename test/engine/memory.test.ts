// The per-job memory budget and the encoders' limits: refused at validation where the sizes follow
// from literals, a clean out_of_memory at run time otherwise, heavy nodes that let the event
// loop turn while they work, and tensor storage freed when a run settles.
import { describe, expect, it } from "vitest";
import type { EngineError } from "../../src/engine/errors.ts";
import { SHARP_PIXEL_LIMIT } from "../../src/engine/media/encoder-limits.ts";
import { newEngine, node, pngOf, recorder } from "./helpers.ts";

const GiB = 2 ** 30;

function emptyImage(width: number, height: number, batch = 1) {
  return node("EmptyImage", { width, height, batch_size: batch, color: 0x336699 });
}

describe("validation: sizes known from the graph", () => {
  it("refuses an EmptyImage past the default 1 GiB budget (16384x16384, 8192x8192 x 8), both shapes", () => {
    const engine = newEngine();
    for (const image of [emptyImage(16384, 16384), emptyImage(8192, 8192, 8)]) {
      const v = engine.validateSync({ "1": image, "2": node("SaveImage", { images: ["1", 0], filename_prefix: "big" }) });
      expect(v.valid).toBe(false);
      expect(v.node_errors["1"]).toEqual([{ field: "", reason: "out_of_range", message: expect.stringMatching(/memory budget of 1\.00 GiB/) }]);
      expect(v.comfy?.error.type).toBe("prompt_outputs_failed_validation");
      expect(v.comfy?.node_errors["1"]?.errors[0]).toMatchObject({ type: "custom_validation_failed", details: expect.stringMatching(/memory budget/) });
    }
  });

  it("accepts the largest image the budget holds (8192x8192, saved as PNG)", () => {
    const v = newEngine().validateSync({ "1": emptyImage(8192, 8192), "2": node("SaveImage", { images: ["1", 0], filename_prefix: "big" }) });
    expect(v.valid).toBe(true);
  });

  it("refuses frames an encoder cannot write, on the saving node's input, whatever the budget", () => {
    const engine = newEngine({ jobMemoryBytes: 64 * GiB });
    const save = (cls: string, image: ReturnType<typeof node>, extra: Record<string, unknown> = {}) =>
      engine.validateSync({ "1": image, "2": node(cls, { images: ["1", 0], filename_prefix: "x", ...extra }) });
    const png = save("SaveImage", emptyImage(16384, 16384));
    expect(png.node_errors["2"]).toEqual([{ field: "images", reason: "out_of_range", message: expect.stringMatching(/PNG/) }]);
    expect(png.node_errors["1"]).toBeUndefined();
    expect(save("PreviewImage", emptyImage(16384, 16384)).node_errors["2"]?.[0]?.field).toBe("images");
    // WebP: 16383 pixels a side; the animated encoder takes the whole batch as one input.
    const webp = { fps: 6, lossless: false, quality: 80, method: "default" };
    expect(save("SaveAnimatedWEBP", emptyImage(16384, 16), webp).node_errors["2"]?.[0]?.message).toMatch(/WebP/);
    expect(save("SaveAnimatedWEBP", emptyImage(8192, 8192, 5), webp).node_errors["2"]?.[0]?.reason).toBe("out_of_range");
    expect(save("FlowgateSaveVideo", emptyImage(16384, 16), { fps: 8, quality: 80 }).node_errors["2"]?.[0]?.message).toMatch(/WebP/);
    // What the encoders can write stays valid: a wide PNG, and a large image scaled down first.
    expect(save("SaveImage", emptyImage(16384, 16)).valid).toBe(true);
    expect(save("SaveAnimatedWEBP", emptyImage(16383, 16, 2), webp).valid).toBe(true);
    const scaled = engine.validateSync({
      "1": emptyImage(16384, 16384),
      "2": node("ImageScale", { image: ["1", 0], upscale_method: "nearest-exact", width: 512, height: 0, crop: "disabled" }),
      "3": node("SaveImage", { images: ["2", 0], filename_prefix: "x" }),
    });
    expect(scaled.valid).toBe(true);
    expect(16383 * 16383).toBe(SHARP_PIXEL_LIMIT);
  });

  it("follows sizes along links: a node whose inputs and output together exceed the budget is refused", () => {
    const engine = newEngine();
    // Two 6000x6000 images (412 MiB each) batched: 824 MiB of inputs and 824 MiB of output.
    const v = engine.validateSync({
      "1": emptyImage(6000, 6000),
      "2": node("ImageInvert", { image: ["1", 0] }),
      "3": node("ImageBatch", { image1: ["1", 0], image2: ["2", 0] }),
      "4": node("PreviewImage", { images: ["3", 0] }),
    });
    expect(Object.keys(v.node_errors)).toEqual(["3"]);
    expect(v.node_errors["3"]?.[0]?.reason).toBe("out_of_range");
  });

  it("passes what it cannot size (a loaded file) to the run-time check", async () => {
    const v = newEngine({ jobMemoryBytes: 1024 }).validateSync({
      "1": node("LoadImage", { image: "photo.png" }),
      "2": node("SaveImage", { images: ["1", 0], filename_prefix: "x" }),
    });
    expect(v.valid).toBe(true);
  });
});

describe("run time: the budget", () => {
  const upload = async () => ({ bytes: await pngOf(512, 512, 3, new Array(512 * 512 * 3).fill(90)), hash: "blake3:test" });
  const loadAndSave = { "1": node("LoadImage", { image: "photo.png" }), "2": node("SaveImage", { images: ["1", 0], filename_prefix: "x" }) };

  it("fails a job whose node would allocate past it with out_of_memory on that node, never a crash", async () => {
    const engine = newEngine({ jobMemoryBytes: 2 * 2 ** 20 });
    const { rec, options } = recorder({ resolveUpload: upload });
    const err = (await engine.execute(loadAndSave, options).catch((e: unknown) => e)) as EngineError;
    expect(err.jobError).toMatchObject({
      code: "out_of_memory",
      node_id: "1",
      class_type: "LoadImage",
      message: expect.stringMatching(/memory budget of 2\.0 MiB/),
    });
    expect(rec.outputs).toEqual([]);
    // The same engine runs what fits afterwards: nothing stays charged.
    const small = await engine.execute({ "1": emptyImage(64, 64), "2": node("SaveImage", { images: ["1", 0], filename_prefix: "x" }) });
    expect(small.outputs).toHaveLength(1);
  });

  it("runs the same job under a budget that holds it", async () => {
    const { options } = recorder({ resolveUpload: upload });
    const result = await newEngine({ jobMemoryBytes: 8 * 2 ** 20 }).execute(loadAndSave, options);
    expect(result.outputs).toHaveLength(1);
  });

  it("releases a value once its consumers ran, so a chain needs only two images at a time", async () => {
    // 256x256 images are 768 KiB: a chain of inverts fits in 2 MiB only if each input is let go.
    const chain: Record<string, unknown> = { "1": emptyImage(256, 256) };
    for (let i = 2; i <= 6; i++) chain[String(i)] = node("ImageInvert", { image: [String(i - 1), 0] });
    chain["7"] = node("SaveImage", { images: ["6", 0], filename_prefix: "x" });
    const engine = newEngine({ jobMemoryBytes: 2 * 2 ** 20 });
    expect(engine.validateSync(chain).valid).toBe(true);
    expect((await engine.execute(chain)).outputs).toHaveLength(1);
  });

  it("counts cached values a run reads, so whether a job fits never depends on the cache", async () => {
    // LoadImage (3 MiB of floats) then an invert (3 MiB more): past 5 MiB at the invert. The
    // first run fails there with LoadImage's result cached; the second reads it from the cache.
    const engine = newEngine({ jobMemoryBytes: 5 * 2 ** 20 });
    const graph = {
      "1": node("LoadImage", { image: "photo.png" }),
      "2": node("ImageInvert", { image: ["1", 0] }),
      "3": node("PreviewImage", { images: ["2", 0] }),
    };
    const attempt = async () => {
      const { rec, options } = recorder({ resolveUpload: upload });
      const err = (await engine.execute(graph, options).catch((e: unknown) => e)) as EngineError;
      return { code: err.jobError?.code, node: err.jobError?.node_id, cached: rec.cached };
    };
    expect(await attempt()).toEqual({ code: "out_of_memory", node: "2", cached: [] });
    expect(await attempt()).toEqual({ code: "out_of_memory", node: "2", cached: ["1"] });
  });
});

describe("heavy nodes leave the event loop turning", () => {
  it("a large EmptyImage and its PNG encoding let other callbacks run while the node works", async () => {
    // yieldEveryMs 0: every checkpoint yields, so the count does not depend on how fast the machine is.
    const engine = newEngine({ yieldEveryMs: 0 });
    const turns = new Map<string, number>();
    let ticking = false;
    let count = 0;
    const tick = () => {
      count++;
      if (ticking) setImmediate(tick);
    };
    const { options } = recorder({
      onNodeStart: (e) => {
        count = 0;
        ticking = true;
        setImmediate(tick);
        turns.set(e.node_id, -1);
      },
      onNodeDone: (e) => {
        ticking = false;
        turns.set(e.node_id, count);
      },
    });
    await engine.execute({ "1": emptyImage(1024, 1024, 2), "2": node("PreviewImage", { images: ["1", 0] }) }, options);
    expect(turns.get("1")).toBeGreaterThan(0);
    expect(turns.get("2")).toBeGreaterThan(0);
  });
});

describe("tensor storage is freed when a run settles", () => {
  it("three 4096x4096 runs leave the process's array buffers where the first one left them", async () => {
    // No cache, so that every tensor is dead once its run settles; a colour per run besides.
    const engine = newEngine({ cacheBytes: 0 });
    const levels: number[] = [];
    for (let i = 1; i <= 3; i++) {
      const result = await engine.execute({
        "1": node("EmptyImage", { width: 4096, height: 4096, batch_size: 1, color: i }),
        "2": node("SaveImage", { images: ["1", 0], filename_prefix: "big" }),
      });
      expect(result.outputs).toHaveLength(1);
      levels.push(process.memoryUsage().arrayBuffers);
    }
    // Each run allocates 240 MiB of shared storage (the image and its 8-bit frame); before, all of
    // it stayed allocated, run after run (the pixel worker's heap kept a handle on it too).
    const MiB = 2 ** 20;
    for (const level of levels.slice(1)) expect((level - levels[0]!) / MiB).toBeLessThan(64);
  });
});
