// The embedded node library: every family, looked up by class name.
import type { NodeDefinition } from "../node-spec.ts";
import { audioNodes } from "./audio.ts";
import { flowgateNodes } from "./flowgate.ts";
import { imageFilterNodes } from "./image-filter.ts";
import { imageTransformNodes } from "./image-transform.ts";
import { imageNodes } from "./image.ts";
import { latentNodes } from "./latent.ts";
import { maskNodes } from "./mask.ts";
import { partnerNodes } from "./partner.ts";
import { primitiveNodes } from "./primitives.ts";
import { textNodes } from "./text.ts";
import { videoNodes } from "./video.ts";

/** Node classes by name. */
export type NodeRegistry = ReadonlyMap<string, NodeDefinition>;

/** Builds a registry from definitions; a duplicate class name is a programming error. */
export function createRegistry(definitions: readonly NodeDefinition[]): NodeRegistry {
  const map = new Map<string, NodeDefinition>();
  for (const def of definitions) {
    if (map.has(def.name)) throw new Error(`duplicate node class ${def.name}`);
    map.set(def.name, def);
  }
  return map;
}

/** Every node class of the embedded library. */
export const builtinNodes: readonly NodeDefinition[] = [
  ...imageNodes,
  ...imageTransformNodes,
  ...imageFilterNodes,
  ...maskNodes,
  ...latentNodes,
  ...primitiveNodes,
  ...textNodes,
  ...audioNodes,
  ...videoNodes,
  ...flowgateNodes,
  ...partnerNodes,
];

/** The registry of the embedded library. */
export const builtinRegistry: NodeRegistry = createRegistry(builtinNodes);
