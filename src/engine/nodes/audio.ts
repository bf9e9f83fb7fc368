// Audio family: SaveAudio (nodes_audio.py, FLAC) and FlowgateTone (a sine generator of ours).
import { NodeInputError } from "../errors.ts";
import { encodeFlac } from "../media/flac.ts";
import { makeAudio } from "../media/tensors.ts";
import { floatInput, intInput, socket, stringInput, type NodeDefinition, type NodeFile } from "../node-spec.ts";
import { audioInput, numberInput, stringValue } from "./helpers.ts";

/** SaveAudio: one FLAC file per batch item, prefix_00001_.flac. */
export const SaveAudio: NodeDefinition = {
  name: "SaveAudio",
  display_name: "Save Audio (FLAC)",
  category: "audio",
  description: "",
  python_module: "comfy_extras.nodes_audio",
  input: {
    required: { audio: socket("AUDIO"), filename_prefix: stringInput({ default: "audio/ComfyUI" }) },
    hidden: { prompt: "PROMPT", extra_pnginfo: "EXTRA_PNGINFO" },
  },
  output: [],
  output_node: true,
  run(_ctx, inputs) {
    const audio = audioInput(inputs, "audio");
    const { batch, channels, samples, data } = audio.waveform;
    if (channels < 1 || channels > 8) throw new NodeInputError(`FLAC cannot hold ${channels} channels`);
    const prefix = stringValue(inputs, "filename_prefix", "audio/ComfyUI");
    const files: NodeFile[] = [];
    for (let b = 0; b < batch; b++) {
      const perChannel: Float32Array[] = [];
      for (let c = 0; c < channels; c++) perChannel.push(data.subarray((b * channels + c) * samples, (b * channels + c + 1) * samples));
      files.push({
        prefix,
        extension: "flac",
        uiKey: "audio",
        type: "audio",
        content_type: "audio/flac",
        data: encodeFlac(perChannel, audio.sample_rate),
        folder: "output",
        batchIndex: b,
      });
    }
    return { files };
  },
};

/** FlowgateTone: a mono sine wave as AUDIO (1 x 1 x samples). */
export const FlowgateTone: NodeDefinition = {
  name: "FlowgateTone",
  display_name: "Tone (flowgate)",
  category: "flowgate/audio",
  description: "Generates a sine tone, so audio outputs can be produced without models.",
  python_module: "custom_nodes.flowgate",
  input: {
    required: {
      seconds: floatInput({ default: 1.0, min: 0.01, max: 600.0, step: 0.01 }),
      frequency: floatInput({ default: 440.0, min: 1.0, max: 20000.0, step: 0.1 }),
      sample_rate: intInput({ default: 44100, min: 8000, max: 192000, step: 1 }),
    },
    optional: { amplitude: floatInput({ default: 0.5, min: 0.0, max: 1.0, step: 0.01 }) },
  },
  output: ["AUDIO"],
  output_node: false,
  shapes: (l) => {
    const { seconds, sample_rate: rate } = l;
    return [
      typeof seconds === "number" && typeof rate === "number" ? { kind: "AUDIO", batch: 1, channels: 1, samples: Math.round(seconds * rate) } : undefined,
    ];
  },
  async run(ctx, inputs) {
    const seconds = numberInput(inputs, "seconds");
    const frequency = numberInput(inputs, "frequency");
    const rate = numberInput(inputs, "sample_rate");
    const amplitude = numberInput(inputs, "amplitude", 0.5);
    const n = Math.round(seconds * rate);
    const audio = makeAudio(1, 1, n, rate);
    for (let i = 0; i < n; i++) {
      if ((i & 0xfffff) === 0) await ctx.checkpoint();
      audio.waveform.data[i] = amplitude * Math.sin((2 * Math.PI * frequency * i) / rate);
    }
    return { result: [audio] };
  },
};

/** The audio family. */
export const audioNodes: readonly NodeDefinition[] = [SaveAudio, FlowgateTone];
