// Text nodes: StringConcatenate (nodes_string.py) and PreviewAny (nodes_preview_any.py).
import { isAudio, isImage, isLatent, isMask } from "../media/tensors.ts";
import { pyFloatRepr, pyStr } from "../python.ts";
import { socket, stringInput, type NodeDefinition, type NodeFile } from "../node-spec.ts";
import { stringValue, tempSuffix } from "./helpers.ts";
import { ownUtf8 } from "../../domain/bytes.ts";

/** StringConcatenate: string_a + delimiter + string_b. */
export const StringConcatenate: NodeDefinition = {
  name: "StringConcatenate",
  display_name: "Concatenate",
  category: "utils/string",
  description: "",
  python_module: "comfy_extras.nodes_string",
  input: {
    required: {
      string_a: stringInput({ multiline: true }),
      string_b: stringInput({ multiline: true }),
      delimiter: stringInput({ multiline: false, default: "" }),
    },
  },
  output: ["STRING"],
  output_node: false,
  run(_ctx, inputs) {
    return { result: [[stringValue(inputs, "string_a"), stringValue(inputs, "string_b")].join(stringValue(inputs, "delimiter", ""))] };
  },
};

/** What PreviewAny shows for a value: str() for scalars, json.dumps(indent=4) for data, a summary for tensors. */
export function previewText(source: unknown): string {
  if (source === null || source === undefined) return "None";
  if (typeof source === "string") return source;
  if (typeof source === "boolean") return source ? "True" : "False";
  if (typeof source === "number") return Number.isInteger(source) ? String(source) : pyFloatRepr(source);
  if (isImage(source)) return `IMAGE tensor of shape [${source.batch}, ${source.height}, ${source.width}, 3]`;
  if (isMask(source)) return `MASK tensor of shape [${source.batch}, ${source.height}, ${source.width}]`;
  if (isLatent(source)) return `LATENT {'samples': tensor of shape [${source.samples.shape.join(", ")}]}`;
  if (isAudio(source)) {
    const w = source.waveform;
    return `AUDIO {'waveform': tensor of shape [${w.batch}, ${w.channels}, ${w.samples}], 'sample_rate': ${source.sample_rate}}`;
  }
  try {
    // json.dumps escapes non-ASCII by default.
    return JSON.stringify(source, null, 4).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  } catch {
    return pyStr(source);
  }
}

/** A text output file (not listed in ui, which carries the text itself). */
export function textFile(text: string, prefix: string, folder: "output" | "temp"): NodeFile {
  return { prefix, extension: "txt", type: "text", content_type: "text/plain; charset=utf-8", data: ownUtf8(text), folder };
}

/** PreviewAny: shows any value as text; reported as a text output. */
export const PreviewAny: NodeDefinition = {
  name: "PreviewAny",
  display_name: "Preview as Text",
  category: "utilities",
  description: "",
  python_module: "comfy_extras.nodes_preview_any",
  input: { required: { source: socket("*", {}) } },
  output: ["STRING"],
  output_node: true,
  run(_ctx, inputs) {
    const value = previewText(inputs.source);
    return { result: [value], ui: { text: [value] }, files: [textFile(value, `ComfyUI${tempSuffix()}`, "temp")] };
  },
};

/** The text family. */
export const textNodes: readonly NodeDefinition[] = [StringConcatenate, PreviewAny];
