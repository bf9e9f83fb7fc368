// Node definitions from ComfyUI's GET /object_info, without run functions, so that the
// embedded engine's analysis (validate.ts) checks graphs for a ComfyUI instance too: the same
// rules and both error shapes, whichever backend runs the job.
import { isPlainObject } from "../graph.ts";
import type { InputSpec, NodeDefinition } from "../node-spec.ts";
import type { NodeRegistry } from "../nodes/registry.ts";
import type { ObjectInfo } from "../object-info.ts";
import { cloneJson } from "../../domain/exact-json.ts";

/** True for an input ComfyUI fills from its input folder (image_upload, audio_upload, video_upload...). */
export function isUploadInput(spec: InputSpec): boolean {
  const opts = spec[1];
  return !!opts && Object.entries(opts).some(([k, v]) => v === true && (k === "upload" || k.endsWith("_upload")));
}

function inputSpec(raw: unknown): InputSpec {
  // An entry this code cannot read accepts anything; ComfyUI still has the last word at POST /prompt.
  if (!Array.isArray(raw) || raw.length === 0) return ["*"];
  const [type, opts] = raw as [unknown, unknown];
  const t = typeof type === "string" || Array.isArray(type) ? (type as InputSpec[0]) : "*";
  return isPlainObject(opts) ? [t, opts] : [t];
}

/** V3 dynamic inputs (autogrow, dynamic combos) expand into other input names; ComfyUI checks them. */
function isDynamic(spec: InputSpec): boolean {
  return typeof spec[0] === "string" && /^COMFY_.*_V3$/.test(spec[0]);
}

function inputs(raw: unknown, keep: (spec: InputSpec) => boolean): Record<string, InputSpec> {
  const out: Record<string, InputSpec> = {};
  if (isPlainObject(raw)) for (const [name, spec] of Object.entries(raw)) if (keep(inputSpec(spec))) out[name] = inputSpec(spec);
  return out;
}

function notRunnable(): never {
  throw new Error("definitions from object_info are for validation only");
}

/** One node class from its object_info entry; null when the entry is unusable. */
export function definitionOf(name: string, raw: unknown): NodeDefinition | null {
  if (!isPlainObject(raw)) return null;
  const input = isPlainObject(raw.input) ? raw.input : {};
  const required = inputs(input.required, (s) => !isDynamic(s));
  const optional = inputs(input.optional, (s) => !isDynamic(s));
  const all = { ...required, ...optional };
  const fileInputs = Object.keys(all).filter((k) => isUploadInput(all[k]!));
  const str = (v: unknown) => (typeof v === "string" ? v : "");
  return {
    name,
    display_name: str(raw.display_name) || name,
    category: str(raw.category),
    description: str(raw.description),
    python_module: str(raw.python_module),
    input: { required, optional },
    output: Array.isArray(raw.output) ? raw.output.map((t) => (typeof t === "string" ? t : "*")) : [],
    output_node: raw.output_node === true,
    api_node: raw.api_node === true,
    fileInputs,
    run: notRunnable,
  };
}

/** A registry over one or more object_info documents; the first to define a class wins. */
export function registryOf(infos: readonly Record<string, unknown>[]): NodeRegistry {
  const map = new Map<string, NodeDefinition>();
  for (const info of infos) {
    for (const [name, raw] of Object.entries(info)) {
      if (map.has(name)) continue;
      const def = definitionOf(name, raw);
      if (def) map.set(name, def);
    }
  }
  return map;
}

/** object_info documents merged the same way (first wins), for GET /object_info. */
export function mergeObjectInfo(infos: readonly Record<string, unknown>[]): ObjectInfo {
  const out: Record<string, unknown> = {};
  for (const info of infos) for (const [name, raw] of Object.entries(info)) if (!(name in out)) out[name] = raw;
  const copy = cloneJson(out);
  for (const [name, raw] of Object.entries(copy)) if (isPlainObject(raw)) normalizeEntry(name, raw);
  return copy as ObjectInfo;
}

/**
 * ComfyUI sends `display_name: null` for nodes that set none (many V3 nodes); its own frontend
 * shows the class name then, and the contract promises a string: flowgate sends that name. Some
 * V3 text nodes send `output_is_list: [null]`, which its frontend reads as false: so does flowgate.
 */
function normalizeEntry(name: string, entry: Record<string, unknown>): void {
  if (typeof entry.display_name !== "string" || entry.display_name === "")
    entry.display_name = typeof entry.name === "string" && entry.name !== "" ? entry.name : name;
  if (Array.isArray(entry.output_is_list)) entry.output_is_list = entry.output_is_list.map((v) => v === true);
}
