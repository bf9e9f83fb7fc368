// How a node of the embedded library is declared: ComfyUI's INPUT_TYPES tuples plus a run function.
import type { OUTPUT_TYPES } from "../../generated/enums.ts";

/** A type name ("INT", "IMAGE", "*", "COMBO"...) or a V1 combo's option list. */
export type InputType = string | readonly (string | number)[];

/** ComfyUI's input tuple: [type] or [type, options]. */
export type InputSpec = readonly [InputType] | readonly [InputType, Readonly<Record<string, unknown>>];

/** INPUT_TYPES(): required, optional and hidden inputs. */
export interface NodeInputTypes {
  required: Readonly<Record<string, InputSpec>>;
  optional?: Readonly<Record<string, InputSpec>>;
  hidden?: Readonly<Record<string, string>>;
}

/** The six kinds every output is normalised into. */
export type OutputType = (typeof OUTPUT_TYPES)[number];

/** A file a node produces; the engine names it ComfyUI-style and reports it. */
export interface NodeFile {
  /** The node's filename_prefix, possibly with a subfolder ("audio/ComfyUI"). */
  prefix: string;
  extension: string;
  /** Key of ComfyUI's ui dict this file is listed under ("images", "audio", "latents"...); absent: not listed. */
  uiKey?: string;
  type: OutputType;
  content_type: string;
  data: Buffer;
  folder: "output" | "temp";
  /** Image size, for %width% / %height% in prefixes. */
  width?: number;
  height?: number;
  /** Index in the batch, for %batch_num%. */
  batchIndex?: number;
}

/** What a node returns: link outputs, ComfyUI's ui dict, and files. */
export interface NodeResult {
  result?: unknown[];
  ui?: Record<string, unknown[]>;
  files?: NodeFile[];
}

/** A file input after resolution: an upload name or a core/ASSET reference turned into bytes. */
export interface ResolvedFile {
  source: "upload" | "asset";
  /** The upload name, or the asset's file_path hint or id. */
  name: string;
  bytes: Buffer;
  /** Content hash from the resolver; the node's change marker. */
  hash: string;
}

/** What a running node may use. */
export interface NodeContext {
  readonly node_id: string;
  readonly class_type: string;
  readonly signal: AbortSignal;
  /** Throws the cancellation error when the run was aborted: call at step boundaries. */
  throwIfAborted(): void;
  /** Waits, or rejects as soon as the run is aborted. */
  sleep(ms: number): Promise<void>;
  /** Call often inside long loops: yields to the event loop every few milliseconds and throws when aborted. */
  checkpoint: Checkpoint;
  /** Reports step progress (value of max). */
  progress(value: number, max: number): void;
  /** Reports a JPEG preview. */
  preview(jpeg: Buffer): void;
  /** Writes to the run's standard output. */
  log(text: string): void;
  /** Partner access; only given to nodes declared api_node. */
  readonly partner: PartnerAccess | null;
}

/** Cooperative pause point for long computations (see NodeContext.checkpoint). */
export type Checkpoint = () => Promise<void>;

/** A checkpoint that never pauses (for direct calls outside a run). */
export const noCheckpoint: Checkpoint = async () => {};

/** What a partner node gets for one run. */
export interface PartnerAccess {
  readonly url: string | null;
  readonly apiKey: string | null;
  readonly fetch: typeof fetch;
  readonly timeoutMs: number;
}

/** A tensor's size as validation can know it from literals (what flows along a link). */
export type TensorShape =
  | { readonly kind: "IMAGE" | "MASK"; readonly batch: number; readonly height: number; readonly width: number }
  | { readonly kind: "LATENT"; readonly dims: readonly [number, number, number, number] }
  | { readonly kind: "AUDIO"; readonly batch: number; readonly channels: number; readonly samples: number };

/** Input shapes known at validation, by input name (undefined: not a tensor, or not known). */
export type InputShapes = Readonly<Record<string, TensorShape | undefined>>;

/** Bytes of a tensor of this shape (float32 storage). */
export function shapeBytes(shape: TensorShape): number {
  if (shape.kind === "LATENT") return shape.dims.reduce((a, b) => a * b, 4);
  if (shape.kind === "AUDIO") return shape.batch * shape.channels * shape.samples * 4;
  return shape.batch * shape.height * shape.width * (shape.kind === "IMAGE" ? 12 : 4);
}

/** A node class of the embedded library. run() must not modify its inputs: results are cached and shared. */
export interface NodeDefinition {
  name: string;
  display_name: string;
  category: string;
  description: string;
  python_module: string;
  input: NodeInputTypes;
  output: readonly string[];
  output_name?: readonly string[];
  output_tooltips?: readonly string[];
  output_node: boolean;
  /** A partner node: receives the caller's key, never cached. */
  api_node?: boolean;
  /** Inputs that take an upload name or a core/ASSET reference. */
  fileInputs?: readonly string[];
  /** The input holding the step count, for progress weighting. */
  stepsInput?: string;
  /** False for nodes whose result must not be reused (calls out to third parties). */
  cacheable?: boolean;
  /**
   * Output shapes from literals and known input shapes, for the memory check at validation;
   * undefined where unknown. A passed-through input is returned as the same object.
   */
  shapes?(literals: Readonly<Record<string, unknown>>, inputs: InputShapes): readonly (TensorShape | undefined)[];
  /** An encoder limit the known input shapes break (checked at validation), or null. */
  limits?(literals: Readonly<Record<string, unknown>>, inputs: InputShapes): { field: string; message: string } | null;
  run(ctx: NodeContext, inputs: Record<string, unknown>): Promise<NodeResult> | NodeResult;
}

/** ComfyUI's MAX_RESOLUTION. */
export const MAX_RESOLUTION = 16384;

/** An INT widget input. */
export function intInput(options: Record<string, unknown> = {}): InputSpec {
  return ["INT", options];
}

/** A FLOAT widget input. */
export function floatInput(options: Record<string, unknown> = {}): InputSpec {
  return ["FLOAT", options];
}

/** A STRING widget input. */
export function stringInput(options: Record<string, unknown> = {}): InputSpec {
  return ["STRING", options];
}

/** A BOOLEAN widget input. */
export function booleanInput(options: Record<string, unknown> = {}): InputSpec {
  return ["BOOLEAN", options];
}

/** A V1 combo: the option list in type position, as nodes.py declares them. */
export function comboV1(options: readonly string[], extra?: Record<string, unknown>): InputSpec {
  return extra ? [options, extra] : [options];
}

/** A V3 combo: "COMBO" with the options inside, as io.Combo.Input serialises. */
export function comboV3(options: readonly string[], extra: Record<string, unknown> = {}): InputSpec {
  return ["COMBO", { multiselect: false, options, ...extra }];
}

/** A link-only input of a given type (V1 style: a one-element tuple). */
export function socket(type: string, extra?: Record<string, unknown>): InputSpec {
  return extra ? [type, extra] : [type];
}

/** The option list of a combo input, or null when the input is not a combo. */
export function comboOptions(spec: InputSpec): readonly (string | number)[] | null {
  const [type, opts] = spec;
  if (Array.isArray(type)) return type;
  if (type === "COMBO") return Array.isArray(opts?.options) ? (opts.options as (string | number)[]) : [];
  return null;
}

/** Looks up a declared input: its spec and whether it is required. */
export function findInput(def: NodeDefinition, name: string): { spec: InputSpec; required: boolean } | null {
  const req = def.input.required[name];
  if (req) return { spec: req, required: true };
  const opt = def.input.optional?.[name];
  return opt ? { spec: opt, required: false } : null;
}

/** Names of all declared (required then optional) inputs. */
export function declaredInputs(def: NodeDefinition): string[] {
  return [...Object.keys(def.input.required), ...Object.keys(def.input.optional ?? {})];
}
