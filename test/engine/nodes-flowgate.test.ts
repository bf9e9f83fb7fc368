import { describe, expect, it } from "vitest";
import type { ImageTensor, Latent } from "../../src/engine/media/tensors.ts";
import { FlowgateDelay, FlowgatePrint, FlowgateSampler } from "../../src/engine/nodes/flowgate.ts";
import { fakeContext } from "./helpers.ts";

const sample = async (seed: number, steps = 3, width = 32, height = 24) => {
  const ctx = fakeContext();
  const r = await FlowgateSampler.run(ctx, { seed, steps, width, height });
  return { ctx, image: r.result![0] as ImageTensor, latent: r.result![1] as Latent };
};

describe("FlowgateSampler", () => {
  it("is deterministic for a seed and differs between seeds", async () => {
    const a = await sample(42);
    const b = await sample(42, 7);
    const c = await sample(43);
    expect(Buffer.from(a.image.data.buffer).equals(Buffer.from(b.image.data.buffer))).toBe(true);
    expect(Buffer.from(a.image.data.buffer).equals(Buffer.from(c.image.data.buffer))).toBe(false);
  });

  it("handles seeds up to 2^64 - 1", async () => {
    // biome-ignore lint/correctness/noPrecisionLoss: the seed a client sends, as a JSON number would carry it.
    const { image } = await sample(0xffffffffffffffff, 1, 16, 16);
    expect(image.data.every((v) => v >= 0 && v <= 1)).toBe(true);
  });

  it("reports every step and a JPEG preview per step", async () => {
    const { ctx } = await sample(1, 5);
    expect(ctx.progressed).toEqual([
      [1, 5],
      [2, 5],
      [3, 5],
      [4, 5],
      [5, 5],
    ]);
    expect(ctx.previews).toHaveLength(5);
    for (const p of ctx.previews) expect([...p.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
  });

  it("outputs IMAGE at the asked size and a LATENT of 8x8 block means", async () => {
    const { image, latent } = await sample(9, 1, 32, 24);
    expect([image.batch, image.height, image.width]).toEqual([1, 24, 32]);
    expect(latent.samples.shape).toEqual([1, 4, 3, 4]);
    let red = 0;
    for (let y = 0; y < 8; y++) for (let x = 0; x < 8; x++) red += image.data[(y * 32 + x) * 3]!;
    expect(latent.samples.data[0]).toBeCloseTo(red / 64, 5);
  });

  it("stops at a step boundary when aborted", async () => {
    const controller = new AbortController();
    const ctx = fakeContext({
      signal: controller.signal,
      throwIfAborted: () => controller.signal.throwIfAborted(),
      progress: (v) => {
        if (v === 2) controller.abort();
      },
    });
    await expect(FlowgateSampler.run(ctx, { seed: 1, steps: 1000, width: 16, height: 16 })).rejects.toThrow();
    expect(ctx.previews.length).toBeLessThan(5);
  });
});

describe("FlowgateDelay and FlowgatePrint", () => {
  it("FlowgateDelay passes any value through after the wait", async () => {
    const value = { any: "thing" };
    let waited = -1;
    const r = await FlowgateDelay.run(fakeContext({ sleep: async (ms) => void (waited = ms) }), { value, seconds: 0.25 });
    expect(waited).toBe(250);
    expect(r.result![0]).toBe(value);
  });

  it("FlowgatePrint writes a line to standard output and passes the text on", async () => {
    const ctx = fakeContext();
    const r = await FlowgatePrint.run(ctx, { text: "hello" });
    expect(ctx.logs).toEqual(["hello\n"]);
    expect(r.result).toEqual(["hello"]);
    expect(r.ui).toEqual({ text: ["hello"] });
    expect(r.files![0]).toMatchObject({ type: "text" });
  });
});
