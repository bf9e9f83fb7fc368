// core/ASSET references inside a workflow: {"__type": "core/ASSET", "info": {id, hash?, file_path?}}.
import { isPlainObject } from "./graph.ts";

/** A well-formed asset reference; `id` is authoritative, the rest are hints. */
export interface AssetRef {
  id: string;
  hash?: string;
  file_path?: string;
}

/** One core/ASSET object found in a graph; `ref` is null and `problem` set when it is malformed. */
export interface AssetReference {
  node_id: string;
  input: string;
  ref: AssetRef | null;
  problem?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BLAKE3 = /^blake3:[0-9a-f]{64}$/;

/** True for any object that claims to be a core/ASSET reference, well-formed or not. */
export function isAssetObject(v: unknown): v is Record<string, unknown> {
  return isPlainObject(v) && v.__type === "core/ASSET";
}

/** Checks a core/ASSET object: the reference, or why it is malformed. */
export function parseAssetRef(v: unknown): { ref: AssetRef } | { problem: string } {
  if (!isAssetObject(v)) return { problem: "not a core/ASSET object" };
  const info = v.info;
  if (!isPlainObject(info)) return { problem: "info must be an object" };
  if (typeof info.id !== "string" || !UUID.test(info.id)) return { problem: "info.id must be an asset UUID" };
  const ref: AssetRef = { id: info.id };
  if (info.hash !== undefined) {
    if (typeof info.hash !== "string" || !BLAKE3.test(info.hash)) return { problem: "info.hash must be blake3:<64 hex digits>" };
    ref.hash = info.hash;
  }
  if (info.file_path !== undefined) {
    if (typeof info.file_path !== "string" || info.file_path.length === 0 || info.file_path.length > 1024) {
      return { problem: "info.file_path must be a non-empty string" };
    }
    ref.file_path = info.file_path;
  }
  return { ref };
}

/** Every core/ASSET object among the graph's node inputs, malformed ones included, in graph order. */
export function findAssetReferences(graph: unknown): AssetReference[] {
  const found: AssetReference[] = [];
  if (!isPlainObject(graph)) return found;
  for (const [nodeId, node] of Object.entries(graph)) {
    if (!isPlainObject(node) || !isPlainObject(node.inputs)) continue;
    for (const [input, raw] of Object.entries(node.inputs)) {
      // ComfyUI unwraps {"__value__": x} widget values; look inside them too.
      const value = isPlainObject(raw) && "__value__" in raw ? raw.__value__ : raw;
      if (!isAssetObject(value)) continue;
      const parsed = parseAssetRef(value);
      found.push("ref" in parsed ? { node_id: nodeId, input, ref: parsed.ref } : { node_id: nodeId, input, ref: null, problem: parsed.problem });
    }
  }
  return found;
}
