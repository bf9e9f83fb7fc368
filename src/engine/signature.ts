// Cache keys: a node's class, its literal inputs, the keys of the nodes it reads from, and
// the hashes of the files it loads (its change marker, as ComfyUI's IS_CHANGED). Node ids are
// not part of the key, so identical nodes share results, across runs and graphs.
import { createHash, randomUUID } from "node:crypto";
import type { PreparedNode } from "./validate.ts";

/** JSON with object keys sorted, so equal values always serialise alike. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return "null";
  if (value === null || typeof value !== "object" || JSON.isRawJSON(value)) return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/** The cache key of a node given its upstream keys and file hashes; uncacheable nodes get a fresh one. */
export function nodeSignature(node: PreparedNode, upstream: ReadonlyMap<string, string>, fileHashes: Readonly<Record<string, string>>): string {
  if (node.def.cacheable === false) return `uncached:${randomUUID()}`;
  const links: Record<string, [string, number]> = {};
  for (const [name, link] of Object.entries(node.links)) {
    const key = upstream.get(link.from);
    if (key === undefined) throw new Error(`no signature for upstream node ${link.from}`);
    links[name] = [key, link.index];
  }
  return createHash("sha256")
    .update(canonicalJson({ class_type: node.class_type, literals: node.literals, links, files: fileHashes }))
    .digest("hex");
}
