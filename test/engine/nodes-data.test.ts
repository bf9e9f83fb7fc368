import { describe, expect, it } from "vitest";
import { decodeSafetensors } from "../../src/engine/media/safetensors.ts";
import { makeImage, makeLatent, type Latent } from "../../src/engine/media/tensors.ts";
import { EmptyLatentImage, SaveLatent } from "../../src/engine/nodes/latent.ts";
import { PrimitiveBoolean, PrimitiveFloat, PrimitiveInt, PrimitiveString } from "../../src/engine/nodes/primitives.ts";
import { PreviewAny, previewText, StringConcatenate } from "../../src/engine/nodes/text.ts";
import { runNode } from "./helpers.ts";

describe("latent nodes", () => {
  it("EmptyLatentImage is zeros of batch x 4 x h/8 x w/8", async () => {
    const latent = (await runNode(EmptyLatentImage, { width: 64, height: 40, batch_size: 2 })).result![0] as Latent;
    expect(latent.samples.shape).toEqual([2, 4, 5, 8]);
    expect(latent.samples.data.length).toBe(2 * 4 * 5 * 8);
    expect(latent.samples.data.every((v) => v === 0)).toBe(true);
  });

  it("SaveLatent writes ComfyUI's .latent safetensors layout byte for byte", async () => {
    const data = Float32Array.from([0.5, -1, 2, 3.25]);
    const { files } = await runNode(SaveLatent, { samples: makeLatent([1, 4, 1, 1], data), filename_prefix: "latents/x" });
    const bytes = files![0]!.data;
    expect(files![0]).toMatchObject({ extension: "latent", type: "latent", uiKey: "latents", folder: "output" });
    const headerLength = Number(bytes.readBigUInt64LE(0));
    expect((8 + headerLength) % 8).toBe(0);
    const header = JSON.parse(bytes.toString("utf8", 8, 8 + headerLength));
    expect(header).toEqual({
      __metadata__: { format: "pt" },
      latent_format_version_0: { dtype: "F32", shape: [0], data_offsets: [0, 0] },
      latent_tensor: { dtype: "F32", shape: [1, 4, 1, 1], data_offsets: [0, 16] },
    });
    expect(bytes.length).toBe(8 + headerLength + 16);
    expect(bytes.readFloatLE(8 + headerLength + 4)).toBe(-1);
    const parsed = decodeSafetensors(bytes);
    expect(Array.from(parsed.tensors.get("latent_tensor")!.data)).toEqual([0.5, -1, 2, 3.25]);
  });
});

describe("primitives and text", () => {
  it("primitives pass their value on", async () => {
    expect((await runNode(PrimitiveString, { value: "hi" })).result).toEqual(["hi"]);
    expect((await runNode(PrimitiveInt, { value: 7 })).result).toEqual([7]);
    expect((await runNode(PrimitiveFloat, { value: 0.5 })).result).toEqual([0.5]);
    expect((await runNode(PrimitiveBoolean, { value: false })).result).toEqual([false]);
  });

  it("StringConcatenate joins with the delimiter", async () => {
    expect((await runNode(StringConcatenate, { string_a: "a", string_b: "b", delimiter: ", " })).result).toEqual(["a, b"]);
  });

  it("PreviewAny shows values as ComfyUI's str()/json.dumps and reports a text output", async () => {
    expect(previewText(true)).toBe("True");
    expect(previewText(2.5)).toBe("2.5");
    expect(previewText(null)).toBe("None");
    expect(previewText({ a: [1, "é"] })).toBe('{\n    "a": [\n        1,\n        "\\u00e9"\n    ]\n}');
    expect(previewText(makeImage(1, 2, 3))).toBe("IMAGE tensor of shape [1, 2, 3, 3]");
    const r = await runNode(PreviewAny, { source: "hello" });
    expect(r.result).toEqual(["hello"]);
    expect(r.ui).toEqual({ text: ["hello"] });
    expect(r.files![0]).toMatchObject({ type: "text", folder: "temp", extension: "txt" });
    expect(r.files![0]!.data.toString("utf8")).toBe("hello");
  });
});
