// Pieces shared by the views: the status badge, the progress bar and its caption.
import type { Job, JobStatus, Progress } from "./api.ts";
import { h } from "./dom.ts";

/** A colored status label. */
export function statusBadge(status: JobStatus): HTMLElement {
  return h("span", { className: `badge badge-${status}` }, status);
}

/** A progress bar with its percentage, labelled for assistive technology. */
export function progressBar(job: Pick<Job, "status" | "progress">, label: string): HTMLElement {
  const value = job.status === "succeeded" ? 1 : (job.progress?.value ?? 0);
  const pct = Math.round(value * 100);
  return h("div", { className: "progress" }, h("progress", { max: 100, value: pct, "aria-label": label }), h("span", { className: "progress-pct" }, `${pct}%`));
}

/** "node 1 FlowgateSampler · step 11/40" from a progress snapshot. */
export function stepText(progress: Progress | null | undefined): string {
  if (!progress) return "";
  const parts: string[] = [];
  if (progress.current_node) parts.push(`node ${progress.current_node}${progress.current_node_class ? ` ${progress.current_node_class}` : ""}`);
  if (progress.step !== null && progress.step !== undefined && progress.steps) parts.push(`step ${progress.step}/${progress.steps}`);
  parts.push(`${progress.nodes_done}/${progress.nodes_total} nodes`);
  return parts.join(" · ");
}

/** A job's short name: the end of its id (ids are UUIDv7, whose start is the time and repeats). */
export function shortId(id: string): string {
  return id.slice(-8);
}

/** A label key as the contract allows it: 1 to 40 of `A-Z a-z 0-9 _ - .`. */
const LABEL_KEY = /^[A-Za-z0-9_.-]{1,40}$/;

/** The list's address filtered by these labels (and optionally a status): `#/?label=k%3Dv&...`. */
export function labelsHref(labels: ReadonlyArray<readonly [string, string]>, status: string | null = null, cursor: string | null = null): string {
  const q = new URLSearchParams();
  if (status) q.set("status", status);
  for (const [k, v] of labels) q.append("label", `${k}=${v}`);
  if (cursor) q.set("cursor", cursor);
  const text = q.toString();
  return text ? `#/?${text}` : "#/";
}

/**
 * `key=value` pairs (the filter box and the submit page: separated by spaces; the address: one
 * `label` each), or what is wrong with them. A filter takes 3 labels at most, a job 16.
 */
export function parseLabels(pairs: readonly string[], use: "filter" | "job" = "filter"): { labels: Array<[string, string]> } | { error: string } {
  const labels: Array<[string, string]> = [];
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    const [key, value] = at < 0 ? [pair, ""] : [pair.slice(0, at), pair.slice(at + 1)];
    if (at < 0 || !LABEL_KEY.test(key)) return { error: `"${pair}" is not key=value with a key of 1 to 40 letters, digits, _ - or .` };
    if (labels.some(([k]) => k === key)) return { error: `The label ${key} is given twice.` };
    if (value.length > 256) return { error: `The value of ${key} is longer than 256 characters.` };
    labels.push([key, value]);
  }
  if (use === "filter" && labels.length > 3) return { error: "Filter by at most 3 labels." };
  if (use === "job" && labels.length > 16) return { error: "A job carries at most 16 labels." };
  return { labels };
}

/** A job's labels as chips, each a link to the jobs carrying it; null when it has none. */
export function labelChips(metadata: Record<string, string> | undefined, id?: string): HTMLElement | null {
  const entries = Object.entries(metadata ?? {});
  if (entries.length === 0) return null;
  return h(
    "ul",
    { className: "labels", "aria-label": "Labels", ...(id ? { id } : {}) },
    ...entries.map(([k, v]) => h("li", {}, h("a", { className: "label-chip", href: labelsHref([[k, v]]), title: `Jobs labelled ${k}=${v}` }, `${k}=${v}`))),
  );
}
