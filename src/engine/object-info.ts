// Node definitions in the shape of ComfyUI's GET /object_info.
import type { InputSpec, NodeDefinition } from "./node-spec.ts";
import type { NodeRegistry } from "./nodes/registry.ts";
import { cloneJson } from "../domain/exact-json.ts";

/** An input spec as object_info sends it, `[TYPE, options?]`. */
type SpecJson = [InputSpec[0], ...unknown[]];

/** A copy of a section's input specs. */
function specsJson(specs: Readonly<Record<string, InputSpec>>): Record<string, SpecJson> {
  return Object.fromEntries(Object.entries(specs).map(([name, spec]) => [name, [...spec]]));
}

/** One entry of object_info. */
export interface NodeInfo {
  input: {
    required: Record<string, SpecJson>;
    optional?: Record<string, SpecJson>;
    hidden?: Record<string, string>;
  };
  input_order: { required: string[]; optional?: string[]; hidden?: string[] };
  output: string[];
  output_is_list: boolean[];
  output_name: string[];
  name: string;
  display_name: string;
  description: string;
  python_module: string;
  category: string;
  output_node: boolean;
  output_tooltips?: string[];
  api_node: boolean;
  deprecated: boolean;
  experimental: boolean;
}

/** object_info: node class name -> NodeInfo. */
export type ObjectInfo = Record<string, NodeInfo>;

/** The object_info entry of one node class. */
export function nodeInfo(def: NodeDefinition): NodeInfo {
  const input: NodeInfo["input"] = { required: specsJson(def.input.required) };
  const order: NodeInfo["input_order"] = { required: Object.keys(def.input.required) };
  if (def.input.optional) {
    input.optional = specsJson(def.input.optional);
    order.optional = Object.keys(def.input.optional);
  }
  if (def.input.hidden) {
    input.hidden = { ...def.input.hidden };
    order.hidden = Object.keys(def.input.hidden);
  }
  const info: NodeInfo = {
    input,
    input_order: order,
    output: [...def.output],
    output_is_list: def.output.map(() => false),
    output_name: [...(def.output_name ?? def.output)],
    name: def.name,
    display_name: def.display_name,
    description: def.description,
    python_module: def.python_module,
    category: def.category,
    output_node: def.output_node,
    api_node: def.api_node ?? false,
    deprecated: false,
    experimental: false,
  };
  if (def.output_tooltips) info.output_tooltips = [...def.output_tooltips];
  // A deep copy, so callers can never mutate the library's specs.
  return cloneJson(info);
}

/** object_info for every class of a registry. */
export function objectInfo(registry: NodeRegistry): ObjectInfo {
  const out: ObjectInfo = {};
  for (const [name, def] of registry) out[name] = nodeInfo(def);
  return out;
}
