// Validation from ComfyUI's object_info: the same answers, in both shapes, as the embedded
// engine gives for the same node definitions; ComfyUI-only shapes of object_info; the cache,
// its refresh, and what happens when no instance answers or every queue is full.
import { afterEach, describe, expect, it } from "vitest";
import { ComfyUIEngine } from "../../src/engine/comfyui/index.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { EngineBusyError, EngineUnavailableError } from "../../src/engine/engine.ts";
import { FakeComfyUI } from "./fake-comfyui.ts";
import { FAST, until } from "./helpers.ts";
import { reasons } from "../node-errors.ts";

const embedded = new EmbeddedEngine();
const OBJECT_INFO = embedded.nodeDefinitionsSync() as unknown as Record<string, unknown>;
let fakes: FakeComfyUI[] = [];
let engines: ComfyUIEngine[] = [];

afterEach(async () => {
  for (const e of engines) await e.close();
  for (const f of fakes) await f.stop();
  engines = [];
  fakes = [];
});

async function engineOver(objectInfo: Record<string, unknown>, options: Partial<ConstructorParameters<typeof ComfyUIEngine>[0]> = {}) {
  const fake = await new FakeComfyUI({ objectInfo }).start();
  fakes.push(fake);
  const engine = new ComfyUIEngine({ ...FAST, ...options, urls: [fake.url] });
  engines.push(engine);
  return { fake, engine };
}

const n = (class_type: string, inputs: Record<string, unknown>) => ({ class_type, inputs });
const img = () => n("EmptyImage", { width: 8, height: 8, batch_size: 1, color: 0 });

/** One graph per validation reason (and a few valid ones). */
const GRAPHS: Record<string, unknown> = {
  valid: { "1": img(), "2": n("ImageInvert", { image: ["1", 0] }), "3": n("SaveImage", { images: ["2", 0], filename_prefix: "t" }) },
  missing_input: { "1": n("EmptyImage", { height: 8, batch_size: 1, color: 0 }), "3": n("SaveImage", { images: ["1", 0], filename_prefix: "t" }) },
  unknown_class: { "1": img(), "3": n("SaveImage", { images: ["1", 0], filename_prefix: "t" }), "4": n("NoSuchNode", {}) },
  bad_link: { "1": img(), "3": n("SaveImage", { images: ["9", 0], filename_prefix: "t" }) },
  bad_index: { "1": img(), "3": n("SaveImage", { images: ["1", 5], filename_prefix: "t" }) },
  type_mismatch: { "1": n("EmptyLatentImage", { width: 16, height: 16, batch_size: 1 }), "3": n("SaveImage", { images: ["1", 0], filename_prefix: "t" }) },
  out_of_range: { "1": n("EmptyImage", { width: 0, height: 8, batch_size: 1, color: 0 }), "3": n("SaveImage", { images: ["1", 0], filename_prefix: "t" }) },
  not_in_options: {
    "1": img(),
    "2": n("ImageBlend", { image1: ["1", 0], image2: ["1", 0], blend_factor: 0.5, blend_mode: "nope" }),
    "3": n("PreviewImage", { images: ["2", 0] }),
  },
  cycle: {
    "1": n("ImageInvert", { image: ["2", 0] }),
    "2": n("ImageInvert", { image: ["1", 0] }),
    "3": n("SaveImage", { images: ["2", 0], filename_prefix: "t" }),
  },
  no_output_node: { "1": img() },
  bad_node: { "1": { inputs: {} }, "3": n("PreviewAny", { source: "x" }) },
  not_an_object: [1, 2],
  asset_ref: {
    "1": n("LoadImage", { image: { __type: "core/ASSET", info: { id: "0190a0e0-0000-7000-8000-000000000001" } } }),
    "2": n("PreviewImage", { images: ["1", 0] }),
  },
  upload_name: { "1": n("LoadImage", { image: "anything.png" }), "2": n("PreviewImage", { images: ["1", 0] }) },
  several: { "1": n("EmptyImage", { width: -1, batch_size: 1, color: 0 }), "2": n("Nope", {}), "3": n("SaveImage", { images: ["1", 0] }) },
};

describe("validation from object_info", () => {
  it("answers exactly as the embedded engine does for the same definitions, in both shapes", async () => {
    const { engine } = await engineOver(OBJECT_INFO);
    for (const [name, graph] of Object.entries(GRAPHS)) {
      expect(await engine.validate(graph), name).toEqual(embedded.validateSync(graph));
    }
    // Sanity: the table covers every reason.
    const reasons = new Set(
      Object.values(GRAPHS).flatMap((g) =>
        Object.values(embedded.validateSync(g).node_errors)
          .flat()
          .map((e) => e.reason),
      ),
    );
    expect([...reasons].sort()).toEqual([
      "bad_link",
      "bad_node",
      "cycle",
      "missing_input",
      "no_output_node",
      "not_in_options",
      "out_of_range",
      "type_mismatch",
      "unknown_class",
    ]);
  });

  it("reads ComfyUI's own shapes: model lists, upload combos, V3 combos and dynamic inputs", async () => {
    const info = {
      CheckpointLoaderSimple: {
        input: { required: { ckpt_name: [["a.safetensors", "b.safetensors"], { tooltip: "x" }] } },
        output: ["MODEL", "CLIP", "VAE"],
        output_node: false,
      },
      LoadImage: { input: { required: { image: [["cat.png"], { image_upload: true }] } }, output: ["IMAGE", "MASK"], output_node: false },
      LoadVideo: { input: { required: { file: ["COMBO", { options: ["v.mp4"], video_upload: true }] } }, output: ["VIDEO"], output_node: false },
      SaveVideo: { input: { required: { video: ["VIDEO"], format: ["COMBO", { options: ["auto", "mp4"] }] } }, output: [], output_node: true },
      Batch: { input: { required: { values: ["COMFY_AUTOGROW_V3", { template: {} }] } }, output: ["IMAGE"], output_node: false },
      PreviewImage: { input: { required: { images: ["IMAGE"] } }, output: [], output_node: true },
      UseModel: { input: { required: { model: ["MODEL"] } }, output: [], output_node: true },
      Weird: { input: { required: { x: "not a tuple" } }, output: ["IMAGE"], output_node: false },
    };
    const { engine } = await engineOver(info);
    const ok = await engine.validate({
      "1": n("CheckpointLoaderSimple", { ckpt_name: "b.safetensors" }),
      "2": n("LoadImage", { image: "uploaded-by-flowgate.png" }),
      "3": n("PreviewImage", { images: ["2", 0] }),
      "4": n("LoadVideo", { file: { __type: "core/ASSET", info: { id: "0190a0e0-0000-7000-8000-000000000001" } } }),
      "5": n("SaveVideo", { video: ["4", 0], format: "mp4" }),
      "6": n("Batch", { "values.a": ["2", 0] }),
      "7": n("PreviewImage", { images: ["6", 0] }),
      "8": n("Weird", { x: 42 }),
      "9": n("PreviewImage", { images: ["8", 0] }),
    });
    expect(ok).toMatchObject({ valid: true, output_nodes: ["3", "5", "7", "9"] });
    const bad = await engine.validate({
      "1": n("CheckpointLoaderSimple", { ckpt_name: "c.safetensors" }),
      "2": n("UseModel", { model: ["1", 0] }),
      "5": n("SaveVideo", { video: ["1", 0], format: "gif" }),
    });
    expect(reasons(bad.node_errors)).toEqual({
      "1": [{ field: "ckpt_name", reason: "not_in_options" }],
      "5": [
        { field: "video", reason: "type_mismatch" },
        { field: "format", reason: "not_in_options" },
      ],
    });
    expect(bad.comfy?.node_errors["1"]?.errors[0]?.type).toBe("value_not_in_list");
  });

  it("caches object_info, refetches it after the TTL setting, on demand, and for an unknown class", async () => {
    const info: Record<string, unknown> = { ...OBJECT_INFO };
    const { fake, engine } = await engineOver(info, { objectInfoTtlMs: 3_600_000, unknownClassRefreshMs: 3_600_000 });
    const graph = { "1": n("NewNode", {}), "2": n("PreviewAny", { source: ["1", 0] }) };
    expect(reasons((await engine.validate(graph)).node_errors)["1"]).toEqual([{ field: "class_type", reason: "unknown_class" }]);
    await engine.validate(GRAPHS.valid);
    expect(fake.calls("GET", "/object_info")).toHaveLength(1);
    info.NewNode = { input: { required: {} }, output: ["STRING"], output_node: false };
    expect((await engine.validate(graph)).valid).toBe(false); // still the cached copy
    await engine.refreshNodeDefinitions();
    expect((await engine.validate(graph)).valid).toBe(true);
    expect(fake.calls("GET", "/object_info")).toHaveLength(2);

    // A TTL of 0: every use is past it.
    const ttl = await engineOver(info, { objectInfoTtlMs: 0, unknownClassRefreshMs: 3_600_000 });
    await ttl.engine.validate(GRAPHS.valid);
    await ttl.engine.validate(GRAPHS.valid);
    expect(ttl.fake.calls("GET", "/object_info")).toHaveLength(2);

    const onUnknown = await engineOver(OBJECT_INFO, { objectInfoTtlMs: 3_600_000, unknownClassRefreshMs: 0 });
    await onUnknown.engine.validate(GRAPHS.valid);
    expect(onUnknown.fake.calls("GET", "/object_info")).toHaveLength(1);
    await onUnknown.engine.validate(GRAPHS.unknown_class);
    expect(onUnknown.fake.calls("GET", "/object_info")).toHaveLength(2);
  });

  it("with no instance answering: validation and admission fail as unavailable, not ready; the cached copy still validates", async () => {
    const { fake, engine } = await engineOver(OBJECT_INFO);
    expect(await engine.ready()).toBe(true);
    await engine.validate(GRAPHS.valid);
    await fake.stop();
    fakes = [];
    // Reachability comes from the socket while it is open: its close is seen a moment later.
    await until(async () => ((await engine.ready()) ? undefined : true), "not ready");
    expect((await engine.validate(GRAPHS.valid)).valid).toBe(true);
    await expect(engine.admit()).rejects.toBeInstanceOf(EngineUnavailableError);
    const cold = new ComfyUIEngine({ ...FAST, urls: [fake.url] });
    engines.push(cold);
    await expect(cold.validate(GRAPHS.valid)).rejects.toBeInstanceOf(EngineUnavailableError);
  });

  it("admission is refused as busy when every instance's queue is at the bound", async () => {
    const { fake, engine } = await engineOver(OBJECT_INFO, { maxQueue: 2 });
    fake.queue.pending.push("a");
    fake.broadcastStatus();
    await expect(engine.admit()).resolves.toBeUndefined();
    fake.queue.pending.push("b");
    fake.broadcastStatus();
    const err = await until(
      () =>
        engine.admit().then(
          () => undefined,
          (e: unknown) => e,
        ),
      "a refused admission",
    );
    expect(err).toBeInstanceOf(EngineBusyError);
    expect((err as EngineBusyError).retryAfterSeconds).toBeGreaterThan(0);
  });
});
