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
  return h(
    "div",
    { className: "progress" },
    h("progress", { max: 100, value: pct, "aria-label": label }),
    h("span", { className: "progress-pct" }, `${pct}%`),
  );
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
