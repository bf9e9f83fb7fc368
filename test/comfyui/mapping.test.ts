// The pure mappings of the comfyui backend: instance choice, output types, ComfyUI's 400 bodies,
// history outcomes and binary frames.
import { describe, expect, it } from "vitest";
import { jobErrorOf, validationOfComfy400 } from "../../src/engine/comfyui/error-mapping.ts";
import { decodeBinary, outcomeOf, outcomeOfHistory } from "../../src/engine/comfyui/messages.ts";
import { contentTypeOf, outputsOfUi, outputTypeOf } from "../../src/engine/comfyui/outputs.ts";
import { leastBusy } from "../../src/engine/comfyui/pool.ts";
import { previewFrame, textFrame } from "./fake-comfyui.ts";
import { reasons } from "../node-errors.ts";

describe("leastBusy", () => {
  it("takes the lowest load, then fewer prompts of ours, then turns round-robin", () => {
    expect(
      leastBusy(
        [
          { index: 0, load: 3, active: 0 },
          { index: 1, load: 1, active: 1 },
        ],
        0,
        2,
      )?.index,
    ).toBe(1);
    expect(
      leastBusy(
        [
          { index: 0, load: 1, active: 2 },
          { index: 1, load: 1, active: 0 },
        ],
        0,
        2,
      )?.index,
    ).toBe(1);
    const tie = [
      { index: 0, load: 0, active: 0 },
      { index: 1, load: 0, active: 0 },
      { index: 2, load: 0, active: 0 },
    ];
    expect([0, 1, 2, 3].map((turn) => leastBusy(tie, turn, 3)?.index)).toEqual([0, 1, 2, 0]);
    expect(leastBusy([], 0, 2)).toBeNull();
  });
});

describe("outputs", () => {
  it("types files by ui key, then by media type; inline text only under `text`", () => {
    expect(outputTypeOf("images", "image/webp")).toBe("image");
    expect(outputTypeOf("images", "video/mp4")).toBe("video");
    expect(outputTypeOf("gifs", "image/gif")).toBe("video");
    expect(outputTypeOf("audio", "audio/flac")).toBe("audio");
    expect(outputTypeOf("latents", "application/octet-stream")).toBe("latent");
    expect(outputTypeOf("files", "text/plain")).toBe("file");
    expect(outputTypeOf("3d", "model/gltf-binary")).toBe("file");
    expect(outputTypeOf("meshes", "image/png")).toBe("image");
    const ui = {
      images: [{ filename: "a.png", subfolder: "s", type: "temp" }],
      animated: [true],
      text: ["hi", { filename: "t.txt" }],
      value: ["not an output"],
    };
    expect(outputsOfUi(ui)).toEqual([
      { kind: "file", key: "images", file: { filename: "a.png", subfolder: "s", type: "temp" } },
      { kind: "text", key: "text", text: "hi", index: 0 },
      { kind: "file", key: "text", file: { filename: "t.txt", subfolder: "", type: "output" } },
    ]);
  });

  it("takes the media type from the bytes, then the server's header, then the extension", () => {
    const png = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
    expect(contentTypeOf("x.bin", png, "application/octet-stream")).toBe("image/png");
    expect(contentTypeOf("x.csv", Buffer.from("a,b"), "text/csv")).toBe("text/csv");
    expect(contentTypeOf("x.mp3", Buffer.from([0xff, 0xfb, 0x90, 0x00, 0x00]), null)).toBe("audio/mpeg");
    expect(contentTypeOf("x.latent", Buffer.from([0, 1, 2, 0]), "application/octet-stream")).toBe("application/octet-stream");
    expect(contentTypeOf("notes", Buffer.from("plain words"), null)).toBe("text/plain; charset=utf-8");
  });
});

describe("errors", () => {
  it('maps graph-level 400s (no outputs, a bad prompt) to the node id "" and cycles to `cycle`', () => {
    expect(
      reasons(
        validationOfComfy400({ error: { type: "prompt_no_outputs", message: "Prompt has no outputs", details: "", extra_info: {} }, node_errors: [] })
          .node_errors,
      ),
    ).toEqual({ "": [{ field: "", reason: "no_output_node" }] });
    expect(reasons(validationOfComfy400({ error: "no prompt", node_errors: [] }).node_errors)).toEqual({ "": [{ field: "", reason: "bad_node" }] });
    const cycle = validationOfComfy400({
      error: { type: "prompt_outputs_failed_validation" },
      node_errors: {
        "3": {
          errors: [{ type: "exception_during_validation", details: "Dependency cycle detected", extra_info: { exception_type: "graph.DependencyCycleError" } }],
          class_type: "X",
          dependent_outputs: [],
        },
      },
    });
    expect(reasons(cycle.node_errors)).toEqual({ "3": [{ field: "", reason: "cycle" }] });
    expect(cycle.comfy?.node_errors["3"]?.class_type).toBe("X");
  });

  it("maps exception types to job error codes; a partner node's failure is a partner error", () => {
    const code = (exception_type: string, node_type = "X") =>
      jobErrorOf({ exception_type, node_type, exception_message: "m" }, (c) => c === "Partner", []).code;
    expect(code("torch.OutOfMemoryError")).toBe("out_of_memory");
    expect(code("OOMError")).toBe("out_of_memory");
    expect(code("ModelDownloadError")).toBe("missing_model");
    expect(code("ValidationError")).toBe("invalid_input");
    expect(code("InsufficientFundsError")).toBe("partner_node_error");
    expect(code("ValidationError", "Partner")).toBe("partner_node_error");
    expect(code("RuntimeError")).toBe("node_execution_error");
    expect(jobErrorOf({}, () => false, []).message).toBe("The workflow failed on ComfyUI.");
  });
});

describe("messages", () => {
  it("knows the ends of a run, from messages and from history", () => {
    expect(outcomeOf({ type: "executing", data: { node: null, prompt_id: "p" } })).toEqual({ kind: "ended" });
    expect(outcomeOf({ type: "executing", data: { node: "3", prompt_id: "p" } })).toBeNull();
    expect(outcomeOf({ type: "execution_interrupted", data: {} })).toEqual({ kind: "interrupted" });
    expect(outcomeOfHistory({ status: { status_str: "success", completed: true, messages: [] } })).toEqual({ kind: "success" });
    expect(outcomeOfHistory({})).toEqual({ kind: "success" });
    expect(
      outcomeOfHistory({
        status: {
          status_str: "error",
          messages: [
            ["execution_start", {}],
            ["execution_error", { node_id: "2" }],
          ],
        },
      }),
    ).toEqual({ kind: "error", data: { node_id: "2" } });
    expect(outcomeOfHistory({ status: { status_str: "error", messages: [["execution_interrupted", {}]] } })).toEqual({ kind: "interrupted" });
  });

  it("decodes preview and text frames, and ignores what it cannot read", () => {
    const image = Buffer.from([0xff, 0xd8, 0xff, 0x00]);
    const plain = Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 2]), image]);
    expect(decodeBinary(plain)).toEqual({ kind: "preview", contentType: "image/png", image, promptId: null, nodeId: null });
    expect(decodeBinary(previewFrame({ node_id: "9", display_node_id: "4", prompt_id: "p", image_type: "image/jpeg" }, image))).toEqual({
      kind: "preview",
      contentType: "image/jpeg",
      image,
      promptId: "p",
      nodeId: "4",
    });
    expect(decodeBinary(textFrame("7", "step 3"))).toEqual({ kind: "text", nodeId: "7", text: "step 3" });
    expect(decodeBinary(Buffer.from([0, 0, 0, 4, 0, 0, 1, 0, 1]))).toBeNull();
    expect(decodeBinary(Buffer.from([0, 0, 0, 9, 0, 0, 0, 0]))).toBeNull();
  });
});
