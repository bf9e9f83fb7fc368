// Jobs as text for the status, cancel and list commands.
import type { Job } from "../client/types.ts";
import { formatDuration } from "./progress-view.ts";

/** A multi-line summary of one job. */
export function jobSummary(job: Job): string {
  const lines = [
    `job ${job.id}`,
    `  status     ${job.status}${job.status === "queued" && job.queue_position !== null ? ` (position ${job.queue_position})` : ""}`,
  ];
  lines.push(`  created    ${job.created_at}`);
  if (job.started_at) lines.push(`  started    ${job.started_at}`);
  if (job.completed_at) lines.push(`  completed  ${job.completed_at}`);
  if (job.progress) {
    const p = job.progress;
    const node = p.current_node
      ? `, node ${p.current_node}${p.current_node_class ? ` ${p.current_node_class}` : ""}${p.step != null && p.steps ? ` step ${p.step}/${p.steps}` : ""}`
      : "";
    lines.push(`  progress   ${Math.floor(p.value * 100)}% (${p.nodes_done}/${p.nodes_total} nodes${node})`);
  }
  const ms = job.metrics?.execution_ms;
  if (typeof ms === "number") lines.push(`  ran        ${formatDuration(ms)}`);
  for (const o of job.outputs) lines.push(`  output     ${o.name} (${o.type}, ${o.content_type}, ${o.size_bytes} bytes) ${o.url}`);
  if (job.error) lines.push(...`  error      ${jobErrorText(job.error)}`.split("\n"));
  if (job.logs) lines.push(`  logs${job.logs.truncated ? " (truncated)" : ""}:`, ...job.logs.text.split("\n").map((l) => `    ${l}`));
  return `${lines.join("\n")}\n`;
}

/** One line of the list table. */
export function jobRow(job: Job): string {
  const percent = job.progress ? `${Math.floor(job.progress.value * 100)}%` : "";
  return `${job.id}  ${job.status.padEnd(9)}  ${percent.padStart(4)}  ${job.created_at}  ${job.outputs.length} output(s)${labelText(job)}`;
}

/** The job's labels as `  key=value ...`, or "" (older servers send none). */
function labelText(job: Job): string {
  const labels = Object.entries(job.metadata ?? {});
  return labels.length === 0 ? "" : `  ${labels.map(([k, v]) => `${k}=${v}`).join(" ")}`;
}

/** The job's execution error, for humans; the traceback (the engine's stack) only when asked. */
export function jobErrorText(error: NonNullable<Job["error"]>, withTraceback = true): string {
  const where = error.node_id ? ` (node ${error.node_id}${error.class_type ? ` ${error.class_type}` : ""})` : "";
  return `${error.code}: ${error.message}${where}${withTraceback && error.traceback ? `\n${error.traceback}` : ""}`;
}
