// The API-format graph: node id -> {class_type, inputs}; an input is a literal or a link.

/** One node of an API-format graph (`_meta` and other keys are ignored). */
export interface ApiNode {
  class_type: string;
  inputs: Record<string, unknown>;
  _meta?: { title?: string };
}

/** An API-format graph as ComfyUI's POST /prompt takes it. */
export type ApiGraph = Record<string, ApiNode>;

/** A link input: [source node id, output index]. */
export type Link = readonly [string, number];

/** True for any JSON array in input position: ComfyUI treats every list as a link. */
export function isLinkLike(v: unknown): v is unknown[] {
  return Array.isArray(v);
}

/** Reads a well-formed link, or null (ids may be numbers; ComfyUI's are strings). */
export function readLink(v: unknown): Link | null {
  if (!Array.isArray(v) || v.length !== 2) return null;
  const [id, index] = v as [unknown, unknown];
  if (typeof id !== "string" && !(typeof id === "number" && Number.isInteger(id))) return null;
  if (typeof index !== "number" || !Number.isInteger(index) || index < 0) return null;
  return [String(id), index];
}

/** True for a plain JSON object. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** True when the JSON is a UI-format export (top-level `nodes` and `links` arrays), not the API format. */
export function isUiFormat(workflow: unknown): boolean {
  return isPlainObject(workflow) && Array.isArray(workflow.nodes) && Array.isArray(workflow.links);
}

/** Node ids in ComfyUI's usual order: numeric ids numerically, then the rest by string. */
export function compareNodeIds(a: string, b: string): number {
  const na = /^\d+$/.test(a) ? Number(a) : NaN;
  const nb = /^\d+$/.test(b) ? Number(b) : NaN;
  if (!Number.isNaN(na) && !Number.isNaN(nb)) return na - nb || (a < b ? -1 : a > b ? 1 : 0);
  if (!Number.isNaN(na)) return -1;
  if (!Number.isNaN(nb)) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
