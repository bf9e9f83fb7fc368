// The query of ComfyUI's `GET /api/jobs`, read as ComfyUI reads it (values trimmed and lowercased,
// integers as Python's int() takes them), with its 400 messages.
import { HOSTED_JOB_LIST_STATUSES, HOSTED_JOB_SORT_BYS, HOSTED_JOB_SORT_ORDERS } from "../../../generated/enums.ts";
import type { components } from "../../../generated/openapi-types.ts";

type ListStatus = components["schemas"]["HostedJobListStatus"];

/** A read job list query. */
export interface JobListQuery {
  statuses: ListStatus[] | null;
  workflowId: string | null;
  sort: "created" | "duration";
  descending: boolean;
  /** Null: no limit was given. */
  limit: number | null;
  offset: number;
}

/** A value ComfyUI refuses, with its message. */
export class JobListQueryError extends Error {}

const INTEGER = /^\s*[+-]?\d+\s*$/;

/** An integer as Python's int() reads a string, or null; beyond the safe range it saturates (a page that far is empty anyway). */
function integer(value: string): number | null {
  if (!INTEGER.test(value)) return null;
  const n = Number(value.trim());
  return Math.max(-Number.MAX_SAFE_INTEGER, Math.min(Number.MAX_SAFE_INTEGER, n));
}

/** Reads the query; a bad value throws JobListQueryError with ComfyUI's message. */
export function readJobListQuery(query: Partial<Record<"status" | "workflow_id" | "sort_by" | "sort_order" | "limit" | "offset", string>>): JobListQuery {
  let statuses: ListStatus[] | null = null;
  if (query.status) {
    const given = query.status
      .split(",")
      .map((s) => s.trim().toLowerCase())
      .filter((s) => s !== "");
    const bad = given.filter((s) => !(HOSTED_JOB_LIST_STATUSES as readonly string[]).includes(s));
    if (bad.length > 0) throw new JobListQueryError(`Invalid status value(s): ${bad.join(", ")}. Valid values: ${HOSTED_JOB_LIST_STATUSES.join(", ")}`);
    // An empty list after trimming (`status=,`) filters nothing, as in ComfyUI.
    statuses = given.length > 0 ? (given as ListStatus[]) : null;
  }
  const sortBy = (query.sort_by ?? "created_at").toLowerCase();
  if (!(HOSTED_JOB_SORT_BYS as readonly string[]).includes(sortBy)) throw new JobListQueryError(`sort_by must be one of: ${HOSTED_JOB_SORT_BYS.join(", ")}`);
  const sortOrder = (query.sort_order ?? "desc").toLowerCase();
  if (!(HOSTED_JOB_SORT_ORDERS as readonly string[]).includes(sortOrder))
    throw new JobListQueryError(`sort_order must be one of: ${HOSTED_JOB_SORT_ORDERS.join(", ")}`);
  let limit: number | null = null;
  if (query.limit !== undefined) {
    limit = integer(query.limit);
    if (limit === null) throw new JobListQueryError("limit must be an integer");
    if (limit <= 0) throw new JobListQueryError("limit must be a positive integer");
  }
  let offset = 0;
  if (query.offset !== undefined) {
    const n = integer(query.offset);
    if (n === null) throw new JobListQueryError("offset must be an integer");
    offset = Math.max(0, n);
  }
  return {
    statuses,
    workflowId: query.workflow_id ? query.workflow_id : null,
    sort: sortBy === "execution_duration" || sortBy === "execution_time" ? "duration" : "created",
    descending: sortOrder === "desc",
    limit,
    offset,
  };
}
