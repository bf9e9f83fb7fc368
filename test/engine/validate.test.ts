import { describe, expect, it } from "vitest";
import { findAssetReferences, isUiFormat } from "../../src/engine/index.ts";
import { typesCompatible } from "../../src/engine/validate.ts";
import { newEngine, node } from "./helpers.ts";
import { reasons } from "../node-errors.ts";

const engine = newEngine();
const ASSET_ID = "0190c6a2-7e1f-7b3c-9d2e-1a2b3c4d5e6f";

/** A valid base graph: EmptyImage -> ImageInvert -> SaveImage. */
function base() {
  return {
    "1": node("EmptyImage", { width: 8, height: 8, batch_size: 1, color: 0 }),
    "2": node("ImageInvert", { image: ["1", 0] }),
    "3": node("SaveImage", { images: ["2", 0], filename_prefix: "t" }),
  } as Record<string, { class_type: string; inputs: Record<string, unknown> }>;
}

describe("validate: valid graphs", () => {
  it("accepts a valid graph and lists its output nodes", () => {
    const r = engine.validateSync(base());
    expect(r).toEqual({ valid: true, node_errors: {}, comfy: null, output_nodes: ["3"] });
  });

  it("ignores _meta and undeclared inputs", () => {
    const g = base();
    (g["2"] as Record<string, unknown>)._meta = { title: "Invert" };
    g["2"]!.inputs.unused = 42;
    expect(engine.validateSync(g).valid).toBe(true);
  });

  it("is async in the Engine interface with the same answer", async () => {
    await expect(engine.validate(base())).resolves.toEqual(engine.validateSync(base()));
  });

  it("accepts numeric link ids and ComfyUI's {__value__} wrapper", () => {
    const g = base();
    g["2"]!.inputs.image = [1, 0];
    g["1"]!.inputs.width = { __value__: 8 };
    expect(engine.validateSync(g).valid).toBe(true);
  });
});

describe("validate: every reason", () => {
  it("missing_input for an absent required input", () => {
    const g = base();
    delete g["1"]!.inputs.width;
    expect(reasons(engine.validateSync(g).node_errors)).toEqual({ "1": [{ field: "width", reason: "missing_input" }] });
  });

  it("unknown_class for a class the engine does not have", () => {
    const g = base();
    g["4"] = node("NoSuchNode", {});
    expect(reasons(engine.validateSync(g).node_errors)).toEqual({ "4": [{ field: "class_type", reason: "unknown_class" }] });
  });

  it("bad_link for a malformed link, a missing node and a missing output index", () => {
    const a = base();
    a["2"]!.inputs.image = ["1", 0, 1];
    expect(reasons(engine.validateSync(a).node_errors)).toEqual({ "2": [{ field: "image", reason: "bad_link" }] });
    const b = base();
    b["2"]!.inputs.image = ["99", 0];
    expect(reasons(engine.validateSync(b).node_errors)).toEqual({ "2": [{ field: "image", reason: "bad_link" }] });
    const c = base();
    c["2"]!.inputs.image = ["1", 1];
    expect(reasons(engine.validateSync(c).node_errors)).toEqual({ "2": [{ field: "image", reason: "bad_link" }] });
  });

  it("type_mismatch along a link, while * matches anything", () => {
    const g = base();
    g["4"] = node("SolidMask", { value: 1, width: 8, height: 8 });
    g["2"]!.inputs.image = ["4", 0];
    expect(reasons(engine.validateSync(g).node_errors)).toEqual({ "2": [{ field: "image", reason: "type_mismatch" }] });
    const star = base();
    star["4"] = node("FlowgateDelay", { value: ["1", 0], seconds: 0 });
    star["2"]!.inputs.image = ["4", 0];
    star["5"] = node("PreviewAny", { source: ["1", 0] });
    expect(engine.validateSync(star).valid).toBe(true);
  });

  it("type_mismatch for a literal that cannot be coerced, or a literal where a link is needed", () => {
    const a = base();
    a["1"]!.inputs.width = "wide";
    expect(reasons(engine.validateSync(a).node_errors)).toEqual({ "1": [{ field: "width", reason: "type_mismatch" }] });
    const b = base();
    b["2"]!.inputs.image = "not a link";
    expect(reasons(engine.validateSync(b).node_errors)).toEqual({ "2": [{ field: "image", reason: "type_mismatch" }] });
  });

  it("out_of_range below min and above max", () => {
    const g = base();
    g["1"]!.inputs.width = 0;
    g["1"]!.inputs.color = 0x1000000;
    expect(reasons(engine.validateSync(g).node_errors)).toEqual({
      "1": [
        { field: "width", reason: "out_of_range" },
        { field: "color", reason: "out_of_range" },
      ],
    });
  });

  it("not_in_options for a combo value", () => {
    const g = base();
    g["4"] = node("ImageScale", { image: ["1", 0], upscale_method: "nearest", width: 4, height: 4, crop: "disabled" });
    g["5"] = node("PreviewImage", { images: ["4", 0] });
    expect(reasons(engine.validateSync(g).node_errors)).toEqual({ "4": [{ field: "upscale_method", reason: "not_in_options" }] });
  });

  it("cycle for every node on a dependency cycle", () => {
    const g = {
      "1": node("ImageInvert", { image: ["2", 0] }),
      "2": node("ImageInvert", { image: ["1", 0] }),
      "3": node("SaveImage", { images: ["2", 0], filename_prefix: "t" }),
    };
    expect(reasons(engine.validateSync(g).node_errors)).toEqual({
      "1": [{ field: "", reason: "cycle" }],
      "2": [{ field: "", reason: "cycle" }],
    });
  });

  it("cycle for a node linked to itself", () => {
    const g = {
      "1": node("StringConcatenate", { string_a: ["1", 0], string_b: "x", delimiter: "" }),
      "2": node("PreviewAny", { source: ["1", 0] }),
    };
    expect(reasons(engine.validateSync(g).node_errors)).toEqual({ "1": [{ field: "", reason: "cycle" }] });
  });

  it("cycle only for the nodes on it, also when the loop hangs below a second output", () => {
    const g = {
      "1": node("EmptyImage", { width: 8, height: 8, batch_size: 1, color: 0 }),
      "2": node("SaveImage", { images: ["1", 0], filename_prefix: "ok" }),
      "3": node("ImageBlend", { image1: ["1", 0], image2: ["5", 0], blend_factor: 0.5, blend_mode: "normal" }),
      "4": node("ImageInvert", { image: ["3", 0] }),
      "5": node("ImageInvert", { image: ["4", 0] }),
      "6": node("ImageInvert", { image: ["5", 0] }),
      "7": node("SaveImage", { images: ["6", 0], filename_prefix: "loop" }),
    };
    expect(reasons(engine.validateSync(g).node_errors)).toEqual({
      "3": [{ field: "", reason: "cycle" }],
      "4": [{ field: "", reason: "cycle" }],
      "5": [{ field: "", reason: "cycle" }],
    });
  });

  it("a node read by several others is no cycle (diamond)", () => {
    const g = {
      "1": node("EmptyImage", { width: 8, height: 8, batch_size: 1, color: 0 }),
      "2": node("ImageInvert", { image: ["1", 0] }),
      "3": node("ImageInvert", { image: ["1", 0] }),
      "4": node("ImageBlend", { image1: ["2", 0], image2: ["3", 0], blend_factor: 0.5, blend_mode: "normal" }),
      "5": node("SaveImage", { images: ["4", 0], filename_prefix: "d" }),
      "6": node("SaveImage", { images: ["2", 0], filename_prefix: "e" }),
    };
    expect(engine.validateSync(g)).toMatchObject({ valid: true, node_errors: {} });
  });

  it("no_output_node under the graph-level key ''", () => {
    const g = { "1": node("EmptyImage", { width: 8, height: 8, batch_size: 1, color: 0 }) };
    expect(reasons(engine.validateSync(g).node_errors)).toEqual({ "": [{ field: "", reason: "no_output_node" }] });
  });

  it("bad_node for a node without class_type, non-object inputs, or a graph that is not an object", () => {
    const g = base() as Record<string, unknown>;
    g["4"] = { inputs: {} };
    g["5"] = { class_type: "ImageInvert", inputs: "nope" };
    expect(reasons(engine.validateSync(g).node_errors)).toEqual({
      "4": [{ field: "class_type", reason: "bad_node" }],
      "5": [{ field: "", reason: "bad_node" }],
    });
    expect(reasons(engine.validateSync([1, 2]).node_errors)).toEqual({ "": [{ field: "", reason: "bad_node" }] });
  });

  it("reports every error at once, across nodes", () => {
    const g = base();
    g["1"]!.inputs.width = -1;
    delete g["1"]!.inputs.height;
    g["3"]!.inputs.filename_prefix = { __type: "core/ASSET", info: { id: ASSET_ID } };
    g["4"] = node("Bogus", {});
    const r = engine.validateSync(g);
    expect(r.valid).toBe(false);
    expect(reasons(r.node_errors)).toEqual({
      "1": [
        { field: "width", reason: "out_of_range" },
        { field: "height", reason: "missing_input" },
      ],
      "3": [{ field: "filename_prefix", reason: "type_mismatch" }],
      "4": [{ field: "class_type", reason: "unknown_class" }],
    });
  });

  it("checks inputs only on output nodes and their ancestors, as ComfyUI", () => {
    const g = base();
    g["9"] = node("ImageInvert", {}); // dangling: never runs
    expect(engine.validateSync(g).valid).toBe(true);
  });
});

describe("validate: ComfyUI literal coercion", () => {
  function widthOf(value: unknown) {
    const g = base();
    g["1"]!.inputs.width = value;
    return engine.validateSync(g);
  }

  it("turns numeric strings into INT and truncates floats, like int()", () => {
    expect(widthOf("12").valid).toBe(true);
    expect(widthOf(" 12 ").valid).toBe(true);
    expect(widthOf(12.9).valid).toBe(true);
    expect(reasons(widthOf("12.5").node_errors)).toEqual({ "1": [{ field: "width", reason: "type_mismatch" }] });
    expect(reasons(widthOf(null).node_errors)).toEqual({ "1": [{ field: "width", reason: "type_mismatch" }] });
  });

  it("turns numbers into STRING and parses FLOAT strings", () => {
    const g = {
      "1": node("StringConcatenate", { string_a: 5, string_b: true, delimiter: 1.5 }),
      "2": node("PreviewAny", { source: ["1", 0] }),
      "3": node("SolidMask", { value: "0.25", width: 4, height: 4 }),
      "4": node("MaskToImage", { mask: ["3", 0] }),
      "5": node("PreviewImage", { images: ["4", 0] }),
    };
    expect(engine.validateSync(g).valid).toBe(true);
  });

  it("validates the coerced value against min and max", () => {
    expect(reasons(widthOf("0").node_errors)).toEqual({ "1": [{ field: "width", reason: "out_of_range" }] });
  });
});

describe("typesCompatible (ComfyUI's validate_node_input)", () => {
  it("matches equal types, wildcards and overlapping unions only", () => {
    expect(typesCompatible("IMAGE", "IMAGE")).toBe(true);
    expect(typesCompatible("*", "IMAGE")).toBe(true);
    expect(typesCompatible("IMAGE", "*")).toBe(true);
    expect(typesCompatible("IMAGE,MASK", "MASK")).toBe(true);
    expect(typesCompatible("IMAGE", "MASK")).toBe(false);
    expect(typesCompatible("STRING", ["a", "b"])).toBe(false);
  });
});

describe("file inputs (LoadImage.image, LoadImageMask.image)", () => {
  function loadGraph(image: unknown) {
    return {
      "1": node("LoadImage", { image }),
      "2": node("PreviewImage", { images: ["1", 0] }),
      "3": node("LoadImageMask", { image, channel: "alpha" }),
      "4": node("MaskToImage", { mask: ["3", 0] }),
      "5": node("PreviewImage", { images: ["4", 0] }),
    };
  }

  it("accept any non-empty upload name and a well-formed core/ASSET reference", () => {
    expect(engine.validateSync(loadGraph("cat.png")).valid).toBe(true);
    const asset = { __type: "core/ASSET", info: { id: ASSET_ID, hash: `blake3:${"ab".repeat(32)}`, file_path: "cat.png" } };
    expect(engine.validateSync(loadGraph(asset)).valid).toBe(true);
  });

  it("reject an empty name, a malformed reference, a number and a link", () => {
    expect(reasons(engine.validateSync(loadGraph("")).node_errors)["1"]).toEqual([{ field: "image", reason: "not_in_options" }]);
    const bad = { __type: "core/ASSET", info: { id: "not-a-uuid" } };
    expect(reasons(engine.validateSync(loadGraph(bad)).node_errors)["1"]).toEqual([{ field: "image", reason: "type_mismatch" }]);
    expect(reasons(engine.validateSync(loadGraph(7)).node_errors)["3"]).toEqual([{ field: "image", reason: "type_mismatch" }]);
    const linked = loadGraph("x.png") as Record<string, { class_type: string; inputs: Record<string, unknown> }>;
    linked["6"] = node("PrimitiveString", { value: "cat.png" });
    linked["1"]!.inputs.image = ["6", 0];
    expect(reasons(engine.validateSync(linked).node_errors)["1"]).toEqual([{ field: "image", reason: "type_mismatch" }]);
  });
});

describe("validate: errors in words", () => {
  const messageOf = (g: unknown, id: string, field: string) => engine.validateSync(g).node_errors[id]?.find((e) => e.field === field)?.message;

  it("every error carries a sentence, whatever its reason", () => {
    const g = {
      ...base(),
      "4": node("NoSuchNode", {}),
      "5": node("ImageScale", { image: ["1", 0], upscale_method: "bogus", width: 0, height: "x", crop: "disabled" }),
      "6": node("SaveImage", { images: ["9", 0], filename_prefix: "t" }),
      "7": node("SaveImage", { images: ["5", 0] }),
    };
    const errors = Object.values(engine.validateSync(g).node_errors).flat();
    expect(errors.length).toBeGreaterThanOrEqual(5);
    for (const e of errors) expect(e.message, JSON.stringify(e)).toMatch(/^[A-Z].{10,}[.?]$/);
  });

  it("suggests the node class meant by a misspelled one, in both shapes", () => {
    const g = { ...base(), "3": node("SaveImag", { images: ["2", 0], filename_prefix: "t" }), "4": node("PreviewAny", { source: ["1", 0] }) };
    const r = engine.validateSync(g);
    expect(r.node_errors["3"]).toEqual([
      { field: "class_type", reason: "unknown_class", message: 'This server has no node class "SaveImag". Did you mean "SaveImage"?' },
    ]);
    expect(r.comfy!.node_errors["3"]!.errors[0]!.extra_info.hint).toBe('Did you mean "SaveImage"?');
    // Case alone, and a swap of two letters, are typos too.
    expect(messageOf({ ...g, "3": node("saveimage", {}) }, "3", "class_type")).toContain('Did you mean "SaveImage"?');
    expect(messageOf({ ...g, "3": node("EmtpyImage", {}) }, "3", "class_type")).toContain('Did you mean "EmptyImage"?');
    // Nothing near: no guess, and no hint in ComfyUI's item.
    const far = engine.validateSync({ ...g, "3": node("Zzzzzzzzzzzzzz", {}) });
    expect(far.node_errors["3"]![0]!.message).toBe('This server has no node class "Zzzzzzzzzzzzzz"; GET /api/object_info lists the classes it has.');
    expect(far.comfy!.node_errors["3"]!.errors[0]!.extra_info).not.toHaveProperty("hint");
  });

  it("suggests the input meant by a misnamed one, and the option meant by a mistyped value", () => {
    const g = base();
    g["3"]!.inputs = { image: ["2", 0], filename_prefix: "t" };
    expect(messageOf(g, "3", "images")).toBe('SaveImage needs the input "images". It was given "image": did you mean "images"?');
    const scale = {
      ...base(),
      "4": node("ImageScale", { image: ["1", 0], upscale_method: "bilinaer", width: 8, height: 8, crop: "disabled" }),
      "5": node("PreviewImage", { images: ["4", 0] }),
    };
    expect(messageOf(scale, "4", "upscale_method")).toMatch(
      /^Input "upscale_method" is "bilinaer", not one of its options: .*"bilinear".*\. Did you mean "bilinear"\?$/,
    );
  });

  it("says what a bound, a link and a type expect", () => {
    const g = base();
    g["1"]!.inputs.width = 0;
    expect(messageOf(g, "1", "width")).toBe('Input "width" is 0, below its minimum of 1.');
    const h = base();
    h["2"]!.inputs.image = ["1", 3];
    expect(messageOf(h, "2", "image")).toBe('Input "image" links to output 3 of node 1 (EmptyImage), which has 1 output (0).');
  });

  it("an empty or missing LoadImage image says how to give one", () => {
    const empty = { "1": node("LoadImage", { image: "" }), "2": node("PreviewImage", { images: ["1", 0] }) };
    expect(messageOf(empty, "1", "image")).toBe(
      'Input "image" is empty. No image was chosen. Upload one (POST /api/v2/assets, or POST /api/upload/image on the hosted interface) and give its name or a core/ASSET reference.',
    );
    expect(engine.validateSync(empty).comfy!.node_errors["1"]!.errors[0]!.extra_info.hint).toMatch(/^No image was chosen\. Upload one/);
    const missing = { "1": node("LoadImage", {}), "2": node("PreviewImage", { images: ["1", 0] }) };
    expect(messageOf(missing, "1", "image")).toMatch(/^LoadImage needs the input "image"\. No image was chosen\. Upload one/);
  });
});

describe("isUiFormat", () => {
  it("tells a UI export (top-level nodes and links arrays) from the API format", () => {
    expect(isUiFormat({ nodes: [], links: [], version: 0.4 })).toBe(true);
    expect(isUiFormat(base())).toBe(false);
    expect(isUiFormat({ nodes: [] })).toBe(false);
    expect(isUiFormat(null)).toBe(false);
  });
});

describe("findAssetReferences", () => {
  it("lists every core/ASSET object with node and input, malformed ones with a problem", () => {
    const g = {
      "1": node("LoadImage", { image: { __type: "core/ASSET", info: { id: ASSET_ID, file_path: "a.png" } } }),
      "2": node("LoadImageMask", { image: { __type: "core/ASSET", info: { id: ASSET_ID, hash: "md5:abc" } }, channel: "red" }),
      "3": node("LoadImage", { image: { __value__: { __type: "core/ASSET", info: {} } } }),
      "4": node("LoadImage", { image: "upload.png" }),
    };
    expect(findAssetReferences(g)).toEqual([
      { node_id: "1", input: "image", ref: { id: ASSET_ID, file_path: "a.png" } },
      { node_id: "2", input: "image", ref: null, problem: "info.hash must be blake3:<64 hex digits>" },
      { node_id: "3", input: "image", ref: null, problem: "info.id must be an asset UUID" },
    ]);
  });

  it("returns nothing for graphs without references or that are not objects", () => {
    expect(findAssetReferences(base())).toEqual([]);
    expect(findAssetReferences("x")).toEqual([]);
  });
});

describe("large graphs", () => {
  it("validates a 1,000-node chain", () => {
    const g: Record<string, unknown> = { "0": node("PrimitiveString", { value: "x" }) };
    for (let i = 1; i < 1000; i++) g[String(i)] = node("StringConcatenate", { string_a: [String(i - 1), 0], string_b: "", delimiter: "" });
    g["1000"] = node("PreviewAny", { source: ["999", 0] });
    const r = engine.validateSync(g);
    expect(r.valid).toBe(true);
    expect(r.output_nodes).toEqual(["1000"]);
  });
});
