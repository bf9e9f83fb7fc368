// ComfyUI's shapes of queue entries, file infos and history entries, built from jobs and assets.
import type { WsExecutionErrorData } from "../../../generated/asyncapi-types.ts";
import type { components } from "../../../generated/openapi-types.ts";
import type { AssetRecord, JobRecord } from "../../store/index.ts";
import { exceptionType } from "./status-map.ts";

type Schemas = components["schemas"];

/** ComfyUI's file info of an asset. */
export function fileInfo(asset: Pick<AssetRecord, "name" | "folder">): Schemas["HostedFileInfo"] {
  return { filename: asset.name, subfolder: "", type: asset.folder };
}

/** A node's outputs, with the lists this module fills. */
type NodeOutputs = Schemas["HostedNodeOutputs"] & Record<string, unknown[]>;

const KEY_OF_TYPE: Record<string, string> = { image: "images", video: "video", audio: "audio", latent: "latents", file: "files", text: "files" };

/**
 * A node's outputs keyed as ComfyUI's `executed` message and history do: images, video,
 * audio (file infos), text (inline strings), and the rest as files.
 */
export function nodeOutputs(assets: readonly AssetRecord[], texts: ReadonlyMap<string, string>): Record<string, NodeOutputs> {
  // Keyed by client node ids, which may be any string ("__proto__", "valueOf"): no prototype.
  const byNode: Record<string, NodeOutputs> = Object.create(null);
  for (const a of assets) {
    const node = (byNode[a.node_id ?? ""] ??= {});
    const text = texts.get(a.id);
    if (a.type === "text" && text !== undefined) (node.text ??= []).push(text);
    else (node[KEY_OF_TYPE[a.type ?? "file"] ?? "files"] ??= []).push(fileInfo(a));
  }
  return byNode;
}

/**
 * ComfyUI's queue entry `[number, prompt_id, prompt, extra_data, output_node_ids]`. The caller's
 * extra_data is never kept; ComfyUI's own `create_time` (ms), which its frontend shows, is the job's.
 */
export function queueEntry(job: JobRecord, workflow: Record<string, unknown>): Schemas["HostedQueueEntry"] {
  return [job.seq, job.id, workflow, { create_time: job.created_at }, job.output_node_ids];
}

/** ComfyUI's history entry of a finished job. */
export function historyEntry(
  job: JobRecord,
  workflow: Record<string, unknown>,
  outputs: Record<string, Schemas["HostedNodeOutputs"]>,
): Schemas["HostedHistoryEntry"] {
  const ok = job.status === "succeeded";
  const messages: unknown[][] = [];
  if (job.started_at !== null) messages.push(["execution_start", { prompt_id: job.id, timestamp: job.started_at }]);
  if (ok) messages.push(["execution_success", { prompt_id: job.id, timestamp: job.completed_at }]);
  else if (job.status === "failed") {
    messages.push(["execution_error", { ...executionError(job, null), timestamp: job.completed_at }]);
  } else messages.push(["execution_interrupted", { prompt_id: job.id, timestamp: job.completed_at }]);
  return {
    prompt: queueEntry(job, workflow),
    outputs,
    status: { status_str: ok ? "success" : "error", completed: ok, messages },
    meta: metaOf(outputs),
  };
}

/** ComfyUI's history `meta`: for each node with outputs, where it sits (no subgraphs here: it is its own display and real node). */
function metaOf(outputs: Record<string, unknown>): Record<string, { node_id: string; display_node: string; parent_node: null; real_node_id: string }> {
  const meta: Record<string, { node_id: string; display_node: string; parent_node: null; real_node_id: string }> = Object.create(null);
  for (const id of Object.keys(outputs)) meta[id] = { node_id: id, display_node: id, parent_node: null, real_node_id: id };
  return meta;
}

/**
 * ComfyUI's execution_error of a failed job (without timestamp): in front of ComfyUI its fields as
 * ComfyUI sent them (but exception_type, which the contract bounds); otherwise built from the job's error. `executed`: the nodes seen executing
 * (null: none known, then ComfyUI's or empty).
 */
export function executionError(job: JobRecord, executed: string[] | null): Omit<WsExecutionErrorData, "timestamp"> {
  const err = job.error;
  const comfy = err?.comfy;
  return {
    prompt_id: job.id,
    node_id: err?.node_id ?? null,
    node_type: err?.class_type ?? null,
    executed: comfy?.executed ?? executed ?? [],
    exception_message: err?.message ?? "The workflow failed.",
    // The contract names six exception types (HostedExceptionType): ComfyUI's own (RuntimeError...) maps onto them by the job's code.
    exception_type: exceptionType(err?.code),
    traceback: comfy?.traceback ?? (err?.traceback ? err.traceback.split("\n") : []),
    current_inputs: comfy?.current_inputs ?? {},
    current_outputs: comfy?.current_outputs ?? [],
  };
}
