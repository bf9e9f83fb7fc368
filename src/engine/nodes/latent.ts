// Latent family (nodes.py): EmptyLatentImage, SaveLatent.
import { encodeSafetensors } from "../media/safetensors.ts";
import { makeLatent, type Latent } from "../media/tensors.ts";
import { intInput, MAX_RESOLUTION, socket, stringInput, type NodeDefinition } from "../node-spec.ts";
import { knownInt, latentInput, numberInput, stringValue } from "./helpers.ts";

/** EmptyLatentImage: zeros of batch x 4 x height/8 x width/8. */
export const EmptyLatentImage: NodeDefinition = {
  name: "EmptyLatentImage",
  display_name: "Empty Latent Image",
  category: "latent",
  description: "",
  python_module: "nodes",
  input: {
    required: {
      width: intInput({ default: 512, min: 16, max: MAX_RESOLUTION, step: 8, tooltip: "The width of the latent images in pixels." }),
      height: intInput({ default: 512, min: 16, max: MAX_RESOLUTION, step: 8, tooltip: "The height of the latent images in pixels." }),
      batch_size: intInput({ default: 1, min: 1, max: 4096, tooltip: "The number of latent images in the batch." }),
    },
  },
  output: ["LATENT"],
  output_tooltips: ["The empty latent image batch."],
  output_node: false,
  shapes: (l) => {
    const [width, height, batch] = [knownInt(l.width), knownInt(l.height), knownInt(l.batch_size ?? 1)];
    return [width && height && batch ? { kind: "LATENT", dims: [batch, 4, Math.floor(height / 8), Math.floor(width / 8)] } : undefined];
  },
  run(_ctx, inputs) {
    const width = numberInput(inputs, "width");
    const height = numberInput(inputs, "height");
    const batch = numberInput(inputs, "batch_size", 1);
    return { result: [makeLatent([batch, 4, Math.floor(height / 8), Math.floor(width / 8)])] };
  },
};

/** The .latent file ComfyUI writes: latent_tensor plus the empty latent_format_version_0 marker. */
export function latentFile(latent: Latent): Buffer {
  return encodeSafetensors(
    [
      { name: "latent_tensor", shape: latent.samples.shape, data: latent.samples.data },
      { name: "latent_format_version_0", shape: [0], data: new Float32Array(0) },
    ],
    { format: "pt" },
  );
}

/** SaveLatent: a safetensors .latent file in the output folder. */
export const SaveLatent: NodeDefinition = {
  name: "SaveLatent",
  display_name: "SaveLatent",
  category: "_for_testing",
  description: "",
  python_module: "nodes",
  input: {
    required: { samples: socket("LATENT"), filename_prefix: stringInput({ default: "latents/ComfyUI" }) },
    hidden: { prompt: "PROMPT", extra_pnginfo: "EXTRA_PNGINFO" },
  },
  output: [],
  output_node: true,
  run(_ctx, inputs) {
    const latent = latentInput(inputs, "samples");
    return {
      files: [
        {
          prefix: stringValue(inputs, "filename_prefix", "latents/ComfyUI"),
          extension: "latent",
          uiKey: "latents",
          type: "latent",
          content_type: "application/octet-stream",
          data: latentFile(latent),
          folder: "output",
        },
      ],
    };
  },
};

/** The latent family. */
export const latentNodes: readonly NodeDefinition[] = [EmptyLatentImage, SaveLatent];
