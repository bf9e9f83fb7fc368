// Contract types the clients speak, taken from the generated OpenAPI types.
import { TERMINAL_JOB_STATUSES } from "../../generated/enums.ts";
import type { components } from "../../generated/openapi-types.ts";

type Schemas = components["schemas"];

/** A job as any v2 response carries it (`logs` only ever appears on GET). */
export type Job = Schemas["Job"];
export type JobStatus = Schemas["JobStatus"];
export type Progress = Schemas["Progress"];
export type Output = Schemas["Output"];
export type JobError = Schemas["JobError"];
export type JobUrls = Schemas["JobUrls"];
/** A job's captured standard output (`GET` of its `urls.logs`). */
export type JobLogs = Schemas["JobLogs"];
/** A listed job: the job plus the official SDK's item fields (`create_time`, `update_time`, `deployment_id`). */
export type JobListItem = Schemas["JobListItem"];
export type Asset = Schemas["Asset"];
export type Workflow = Schemas["Workflow"];
export type ErrorCode = Schemas["ErrorCode"];
export type ErrorEnvelope = Schemas["ErrorEnvelope"];
export type HostedFileInfo = Schemas["HostedFileInfo"];
export type HostedNodeOutputs = Schemas["HostedNodeOutputs"];
export type HostedUploadResult = Schemas["HostedUploadResult"];
export type HostedPromptResult = Schemas["HostedPromptResult"];
export type HostedQueue = Schemas["HostedQueue"];
export type HostedHistory = Schemas["HostedHistory"];
export type HostedNodeDefinitions = Schemas["HostedNodeDefinitions"];

/** One page of `GET /api/v2/jobs`. */
export interface JobPage {
  jobs: JobListItem[];
  next_cursor: string | null;
}

/** The terminal v2 statuses; a terminal status never changes. */
export const TERMINAL_STATUSES: readonly JobStatus[] = TERMINAL_JOB_STATUSES;

/** True when a v2 job status is terminal. */
export function isTerminalStatus(status: string): boolean {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/** The value a workflow input takes to reference an uploaded asset (`core/ASSET`). */
export function assetReference(asset: Pick<Asset, "id" | "hash" | "file_path">): {
  __type: "core/ASSET";
  info: { id: string; hash?: string; file_path?: string };
} {
  const info: { id: string; hash?: string; file_path?: string } = { id: asset.id };
  if (asset.hash) info.hash = asset.hash;
  if (asset.file_path) info.file_path = asset.file_path;
  return { __type: "core/ASSET", info };
}
