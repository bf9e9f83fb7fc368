import { describe, expect, it } from "vitest";
import { newEngine, node } from "./helpers.ts";

const engine = newEngine();

function comfyOf(graph: unknown) {
  const r = engine.validateSync(graph);
  expect(r.valid).toBe(false);
  return r.comfy!;
}

describe("ComfyUI's POST /prompt error shape", () => {
  it("prompt_outputs_failed_validation with per-node errors, dependent outputs and class types", () => {
    const graph = {
      "1": node("EmptyImage", { width: 99999, height: 8, batch_size: 1, color: 0 }),
      "2": node("ImageScale", { image: ["1", 0], upscale_method: "nearest", width: 4, height: 4, crop: "disabled" }),
      "3": node("SaveImage", { images: ["2", 0], filename_prefix: "a" }),
      "4": node("PreviewImage", { images: ["1", 0] }),
    };
    const c = comfyOf(graph);
    expect(c.error).toEqual({
      type: "prompt_outputs_failed_validation",
      message: "Prompt outputs failed validation",
      details:
        "Value 99999 bigger than max of 16384: width\nValue not in list: upscale_method: 'nearest' not in ['nearest-exact', 'bilinear', 'area', 'bicubic', 'lanczos']",
      extra_info: {},
    });
    expect(c.node_errors["1"]).toEqual({
      errors: [
        {
          type: "value_bigger_than_max",
          message: "Value 99999 bigger than max of 16384",
          details: "width",
          extra_info: { input_name: "width", input_config: ["INT", { default: 512, min: 1, max: 16384, step: 1 }], received_value: 99999 },
        },
      ],
      dependent_outputs: ["3", "4"],
      class_type: "EmptyImage",
    });
    expect(c.node_errors["2"]!.errors[0]!.type).toBe("value_not_in_list");
    expect(c.node_errors["2"]!.dependent_outputs).toEqual(["3"]);
    expect(Object.keys(c.node_errors).sort()).toEqual(["1", "2"]);
  });

  it("required_input_missing and value_smaller_than_min with float formatting", () => {
    const graph = {
      "1": node("SolidMask", { value: -0.5, width: 4 }),
      "2": node("MaskToImage", { mask: ["1", 0] }),
      "3": node("PreviewImage", { images: ["2", 0] }),
    };
    const errors = comfyOf(graph).node_errors["1"]!.errors;
    expect(errors.map((e) => [e.type, e.message, e.details])).toEqual([
      ["value_smaller_than_min", "Value -0.5 smaller than min of 0.0", "value"],
      ["required_input_missing", "Required input is missing", "height"],
    ]);
    expect(errors[1]!.extra_info).toEqual({ input_name: "height" });
  });

  it("invalid_input_type with Python's exception text", () => {
    const graph = {
      "1": node("EmptyImage", { width: "wide", height: 8, batch_size: 1, color: 0 }),
      "2": node("PreviewImage", { images: ["1", 0] }),
    };
    const e = comfyOf(graph).node_errors["1"]!.errors[0]!;
    expect(e.type).toBe("invalid_input_type");
    expect(e.message).toBe("Failed to convert an input value to a INT value");
    expect(e.details).toBe("width, wide, invalid literal for int() with base 10: 'wide'");
  });

  it("return_type_mismatch and bad_linked_input", () => {
    const graph = {
      "1": node("SolidMask", { value: 1, width: 4, height: 4 }),
      "2": node("PreviewImage", { images: ["1", 0] }),
      "3": node("PreviewAny", { source: ["1"] }),
    };
    const c = comfyOf(graph);
    expect(c.node_errors["2"]!.errors[0]).toMatchObject({
      type: "return_type_mismatch",
      message: "Return type mismatch between linked nodes",
      details: "images, MASK != IMAGE",
      extra_info: { input_name: "images", received_type: "MASK", linked_node: ["1", 0] },
    });
    expect(c.node_errors["3"]!.errors[0]).toMatchObject({ type: "bad_linked_input", details: "source" });
  });

  it("exception_during_validation for links to missing nodes or slots, and for cycles", () => {
    const graph = {
      "1": node("ImageInvert", { image: ["42", 0] }),
      "2": node("PreviewImage", { images: ["1", 0] }),
      "3": node("StringConcatenate", { string_a: ["3", 0], string_b: "", delimiter: "" }),
      "4": node("PreviewAny", { source: ["3", 0] }),
    };
    const c = comfyOf(graph);
    expect(c.node_errors["1"]!.errors[0]).toEqual({
      type: "exception_during_validation",
      message: "Exception when validating node",
      details: "'42'",
      extra_info: { exception_type: "KeyError", traceback: [] },
    });
    expect(c.node_errors["3"]!.errors[0]).toMatchObject({ type: "exception_during_validation", details: "Dependency cycle detected" });
  });

  it("missing_node_type as ComfyUI answers for an unknown class (title from _meta)", () => {
    const graph = {
      "1": node("EmptyImage", { width: 8, height: 8, batch_size: 1, color: 0 }),
      "2": node("PreviewImage", { images: ["1", 0] }),
      "7": { class_type: "FancyUpscaler", inputs: {}, _meta: { title: "Fancy" } },
    };
    const c = comfyOf(graph);
    expect(c.error).toEqual({
      type: "missing_node_type",
      message: "Node 'Fancy' not found. The custom node may not be installed.",
      details: "Node ID '#7'",
      extra_info: { node_id: "7", class_type: "FancyUpscaler", node_title: "Fancy" },
    });
    expect(c.node_errors["7"]!.class_type).toBe("FancyUpscaler");
  });

  it("prompt_no_outputs with empty node_errors", () => {
    expect(comfyOf({ "1": node("EmptyImage", { width: 8, height: 8, batch_size: 1, color: 0 }) })).toEqual({
      error: { type: "prompt_no_outputs", message: "Prompt has no outputs", details: "", extra_info: {} },
      node_errors: {},
    });
  });

  it("is JSON-serialisable as is", () => {
    const c = comfyOf({ "1": node("Nope") });
    expect(JSON.parse(JSON.stringify(c))).toEqual(c);
  });
});
