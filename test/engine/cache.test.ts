import { describe, expect, it } from "vitest";
import { ByteLruCache } from "../../src/engine/lru-cache.ts";
import { newEngine, node, recorder } from "./helpers.ts";

describe("ByteLruCache", () => {
  // Every entry also weighs its key (two bytes a character) and a fixed 160 bytes of bookkeeping.
  const weight = (key: string, bytes: number) => bytes + key.length * 2 + 160;

  it("evicts least recently used entries until the bytes fit", () => {
    const cache = new ByteLruCache<string>(3 * weight("a", 40) - 1);
    cache.set("a", "A", 40);
    cache.set("b", "B", 40);
    expect(cache.get("a")).toBe("A"); // a is now the most recent
    cache.set("c", "C", 40);
    expect(cache.keys()).toEqual(["a", "c"]);
    expect(cache.bytes).toBe(2 * weight("a", 40));
    expect(cache.get("b")).toBeUndefined();
  });

  it("never stores an entry larger than the whole cache, and replaces keys in place", () => {
    const cache = new ByteLruCache<string>(weight("k", 10));
    expect(cache.set("k", "x", 11)).toBe(false);
    expect(cache.size).toBe(0);
    cache.set("k", "v1", 5);
    cache.set("k", "v2", 7);
    expect([cache.size, cache.bytes, cache.get("k")]).toEqual([1, weight("k", 7), "v2"]);
  });

  it("holds at most its entry bound however small the entries", () => {
    const cache = new ByteLruCache<number>(1e9, 3);
    for (let i = 0; i < 10; i++) cache.set(`k${i}`, i, 1);
    expect(cache.keys()).toEqual(["k7", "k8", "k9"]);
    expect(new ByteLruCache<number>(1e9, 0).set("k", 1, 1)).toBe(false);
  });
});

const chain = (color: number) => ({
  "1": node("EmptyImage", { width: 16, height: 16, batch_size: 1, color }),
  "2": node("ImageInvert", { image: ["1", 0] }),
  "3": node("SaveImage", { images: ["2", 0], filename_prefix: "a" }),
  "4": node("EmptyImage", { width: 16, height: 16, batch_size: 1, color: 0x00ff00 }),
  "5": node("SaveImage", { images: ["4", 0], filename_prefix: "b" }),
});

describe("result caching across runs", () => {
  it("an identical second run computes nothing and still delivers every output", async () => {
    const engine = newEngine();
    const first = recorder();
    await engine.execute(chain(0x123456), first.options);
    const second = recorder();
    const result = await engine.execute(chain(0x123456), second.options);
    expect(second.rec.started).toEqual([]);
    expect(second.rec.start).toEqual({ nodes: [], cached: ["1", "2", "3", "4", "5"], steps: {} });
    expect(second.rec.cached).toEqual(["1", "2", "3", "4", "5"]);
    expect(second.rec.events.slice(0, 2)).toEqual(["start", "cached:1,2,3,4,5"]);
    expect(result.executed).toEqual([]);
    // Outputs are re-emitted from cache with the same bytes, and the nodes report their ui again.
    const bytes = (r: typeof first.rec) => Object.fromEntries(r.outputs.map((o) => [o.node_id, o.data.toString("base64")]));
    expect(bytes(second.rec)).toEqual(bytes(first.rec));
    expect(second.rec.done.map((d) => [d.node_id, d.cached])).toEqual([
      ["3", true],
      ["5", true],
    ]);
    expect(second.rec.done[0]!.ui).toEqual({ images: [{ filename: "a_00001_.png", subfolder: "", type: "output" }] });
  });

  it("a changed input recomputes only the nodes downstream of it", async () => {
    const engine = newEngine();
    await engine.execute(chain(0x123456));
    const { rec, options } = recorder();
    const changed = chain(0x123456);
    changed["4"].inputs.color = 0x0000ff;
    await engine.execute(changed, options);
    expect(rec.started).toEqual(["4", "5"]);
    expect(rec.cached).toEqual(["1", "2", "3"]);
    expect(rec.outputs.map((o) => o.node_id).sort()).toEqual(["3", "5"]);
  });

  it("keys on content, not node ids: the same nodes under other ids are cached", async () => {
    const engine = newEngine();
    await engine.execute(chain(7));
    const { rec, options } = recorder();
    const renamed = {
      a: node("EmptyImage", { width: 16, height: 16, batch_size: 1, color: 7 }),
      b: node("ImageInvert", { image: ["a", 0] }),
      c: node("PreviewImage", { images: ["b", 0] }),
    };
    await engine.execute(renamed, options);
    expect(rec.started).toEqual(["c"]);
    expect(rec.cached).toEqual(["a", "b"]);
  });

  it("re-runs a node whose loaded file changed (the file hash is its change marker)", async () => {
    const engine = newEngine();
    const { pngOf } = await import("./helpers.ts");
    const red = await pngOf(1, 1, 3, [255, 0, 0]);
    const blue = await pngOf(1, 1, 3, [0, 0, 255]);
    const graph = { "1": node("LoadImage", { image: "x.png" }), "2": node("PreviewImage", { images: ["1", 0] }) };
    await engine.execute(graph, { resolveUpload: async () => ({ bytes: red, hash: "blake3:red" }) });
    const same = recorder({ resolveUpload: async () => ({ bytes: red, hash: "blake3:red" }) });
    await engine.execute(graph, same.options);
    expect(same.rec.started).toEqual([]);
    const changed = recorder({ resolveUpload: async () => ({ bytes: blue, hash: "blake3:blue" }) });
    await engine.execute(graph, changed.options);
    expect(changed.rec.started).toEqual(["1", "2"]);
  });

  it("evicts by bytes: a result pushed out of a small cache is computed again", async () => {
    const image = 64 * 64 * 3 * 4; // one 64x64 IMAGE result
    const run = (engine: ReturnType<typeof newEngine>, color: number) =>
      engine.execute({
        "1": node("EmptyImage", { width: 64, height: 64, batch_size: 1, color }),
        "2": node("ImageInvert", { image: ["1", 0] }),
        "3": node("PreviewAny", { source: ["2", 0] }),
      });
    const downstream = (color: number) => ({
      "1": node("EmptyImage", { width: 64, height: 64, batch_size: 1, color }),
      "9": node("ImageFlip", { image: ["1", 0], flip_method: "x-axis: vertically" }),
      "10": node("PreviewAny", { source: ["9", 0] }),
    });
    for (const [bytes, expectRecomputed] of [
      [Math.floor(image * 2.5), true],
      [image * 10, false],
    ] as const) {
      const engine = newEngine({ cacheBytes: bytes });
      await run(engine, 1);
      await run(engine, 2); // pushes color 1's results out of the small cache
      const { rec, options } = recorder();
      await engine.execute(downstream(1), options);
      expect(rec.started.includes("1")).toBe(expectRecomputed);
      expect(engine.cacheStats().bytes).toBeLessThanOrEqual(bytes);
    }
  });
});

describe("what the result cache keeps", () => {
  it("text outputs hold bytes of their own, not a slice of a 64 KiB pool slab that the cache would keep whole", async () => {
    const { textFile } = await import("../../src/engine/nodes/text.ts");
    const file = textFile("a short text result", "p", "output");
    expect(file.data.byteLength).toBe(19);
    expect(file.data.buffer.byteLength).toBe(file.data.byteLength);
  });
});
