// ComfyUI's job API shapes (its comfy_execution/jobs.py): a job's summary for the list, the full
// job, and the summary's output counts and preview, built from flowgate's records.
import type { components } from "../../../generated/openapi-types.ts";
import { isTerminalStatus, type JobRecord, type JobStatus } from "../../store/index.ts";
import { executionError, historyEntry } from "./comfy-shapes.ts";

type Schemas = components["schemas"];
type ListStatus = Schemas["HostedJobListStatus"];
type NodeOutputs = Record<string, Schemas["HostedNodeOutputs"]>;

/** The job API's status of each v2 status: a run being canceled is still in progress, a timed-out one failed. */
export const LIST_STATUS: Record<JobStatus, ListStatus> = {
  queued: "pending",
  running: "in_progress",
  canceling: "in_progress",
  succeeded: "completed",
  failed: "failed",
  expired: "failed",
  canceled: "cancelled",
};

/** The v2 statuses a job API status covers. */
export function jobStatusesOf(statuses: readonly ListStatus[]): JobStatus[] {
  return (Object.keys(LIST_STATUS) as JobStatus[]).filter((s) => statuses.includes(LIST_STATUS[s]));
}

/** Media keys a frontend previews, and file name endings it previews under any key (as ComfyUI's is_previewable). */
const PREVIEWABLE_KEYS = new Set(["images", "video", "audio", "3d", "text"]);
const THREE_D = [".obj", ".fbx", ".gltf", ".glb", ".usdz"];
const TEXT_FILES = [".txt", ".md", ".json"];
/** Text shown in a preview at most, as ComfyUI truncates it. */
const TEXT_PREVIEW_MAX = 1024;

const endsWithAny = (name: string, endings: readonly string[]) => endings.some((e) => name.toLowerCase().endsWith(e));

/**
 * Counts the file outputs (inline text is preview-only, not counted) and the previewable ones,
 * and picks the preview as ComfyUI does: a saved image, video or audio, else a preview of one,
 * else a text file, else inline text.
 */
export function outputsSummary(outputs: NodeOutputs): Pick<Schemas["HostedJob"], "outputs_count" | "previewable_outputs_count" | "preview_output"> {
  let count = 0;
  let previewable = 0;
  let saved: Record<string, unknown> | undefined;
  let temp: Record<string, unknown> | undefined;
  let textFile: Record<string, unknown> | undefined;
  let text: Record<string, unknown> | undefined;
  for (const [nodeId, byKey] of Object.entries(outputs)) {
    for (const [key, items] of Object.entries(byKey as Record<string, unknown>)) {
      if (!Array.isArray(items)) continue;
      for (const item of items as unknown[]) {
        if (typeof item === "string") {
          if (key === "text" && text === undefined) {
            text = { content: item.slice(0, TEXT_PREVIEW_MAX), ...(item.length > TEXT_PREVIEW_MAX ? { truncated: true } : {}), nodeId, mediaType: key };
          }
          continue;
        }
        if (item === null || typeof item !== "object") continue;
        count++;
        const file = item as { filename?: string; type?: string };
        const name = file.filename ?? "";
        if (!PREVIEWABLE_KEYS.has(key) && !endsWithAny(name, THREE_D) && !endsWithAny(name, TEXT_FILES)) continue;
        previewable++;
        const entry = { ...file, nodeId, mediaType: key };
        if (key === "text" || endsWithAny(name, TEXT_FILES)) textFile ??= entry;
        else if (file.type === "output") saved ??= entry;
        else temp ??= entry;
      }
    }
  }
  const preview = saved ?? temp ?? textFile ?? text;
  return { outputs_count: count, previewable_outputs_count: previewable, ...(preview ? { preview_output: preview } : {}) };
}

/** A job's summary, as the list shows it; a field with no value is left out, as ComfyUI does. */
export function jobSummary(job: JobRecord, outputs: NodeOutputs): Schemas["HostedJob"] {
  return {
    id: job.id,
    status: LIST_STATUS[job.status],
    priority: job.seq,
    create_time: job.created_at,
    ...(job.started_at === null ? {} : { execution_start_time: job.started_at }),
    ...(job.completed_at === null ? {} : { execution_end_time: job.completed_at }),
    ...(job.status === "failed" || job.status === "expired" ? { execution_error: { ...executionError(job, null), timestamp: job.completed_at } } : {}),
    ...outputsSummary(outputs),
    ...(job.workflow_id === null ? {} : { workflow_id: job.workflow_id }),
  };
}

/**
 * The full job: the summary, the graph, and once finished its outputs and history status. Of
 * extra_data only ComfyUI's own `create_time`: the caller's is never kept.
 */
export function fullJob(job: JobRecord, workflow: Record<string, unknown>, outputs: NodeOutputs): Schemas["HostedJob"] {
  const extra_data = { create_time: job.created_at };
  const full: Schemas["HostedJob"] = { ...jobSummary(job, outputs), workflow: { prompt: workflow, extra_data } };
  if (isTerminalStatus(job.status)) {
    full.outputs = outputs;
    full.execution_status = historyEntry(job, workflow, outputs).status;
  }
  return full;
}
