// v2 job handlers: thin translations between HTTP and the job lifecycle.
import type { OperationInput, OperationResult } from "../../../generated/handlers.ts";
import type { HandlerContext } from "../handler-context.ts";
import { jobListItemView, jobView, jobWithLogsView, linkKey, logsView } from "../views.ts";
import type { JobStatus } from "../../store/index.ts";
import { ServiceError } from "../../domain/errors.ts";

/** Refuses labels where the server declines them (`--labels off`): a non-empty map or filter is 422 metadata_not_supported. */
function declineLabels(ctx: HandlerContext, labels: object | undefined): void {
  if (!ctx.runtime.config.labels && labels !== undefined && Object.keys(labels).length > 0) {
    throw new ServiceError("metadata_not_supported", "This surface does not accept metadata.");
  }
}

/** POST /api/v2/jobs */
export async function createJob(input: OperationInput<"createJob">, ctx: HandlerContext): Promise<OperationResult<"createJob">> {
  declineLabels(ctx, input.body.metadata);
  const snapshot = await ctx.runtime.jobs.submit(ctx.caller, {
    workflow: input.body.workflow as Record<string, unknown>,
    extra_data: input.body.extra_data,
    ...(input.body.metadata === undefined ? {} : { metadata: input.body.metadata }),
    idempotency_key: input.headers["idempotency-key"],
  });
  const view = jobView(snapshot, ctx.links());
  return { status: 201, body: view, headers: { location: view.urls.self } };
}

/** GET /api/v2/jobs */
export async function listJobs(input: OperationInput<"listJobs">, ctx: HandlerContext): Promise<OperationResult<"listJobs">> {
  declineLabels(ctx, input.query?.metadata);
  const page = await ctx.runtime.jobs.list(ctx.caller, {
    limit: input.query?.limit ?? 20,
    status: input.query?.status as JobStatus | undefined,
    cursor: input.query?.cursor,
    ...(input.query?.metadata === undefined ? {} : { metadata: input.query.metadata as Record<string, string> }),
  });
  const links = ctx.links();
  return { status: 200, body: { jobs: page.jobs.map((s) => jobListItemView(s, links)), next_cursor: page.next_cursor } };
}

const JSON_TYPE = { "content-type": "application/json; charset=utf-8" };

/** GET /api/v2/jobs/{id}: the only view that carries `logs`. */
export async function getJob(input: OperationInput<"getJob">, ctx: HandlerContext): Promise<OperationResult<"getJob">> {
  const withLogs = ctx.runtime.surface.showsLogs(ctx.caller);
  const links = ctx.links();
  if (withLogs) {
    // Logs may still be written after the end: such views are never cached.
    const snapshot = await ctx.runtime.jobs.get(ctx.caller, input.params.id, { withLogs });
    return { status: 200, body: jobWithLogsView(snapshot, links) };
  }
  // Every link of one answer carries the same expiry, which keys the finished-job cache.
  const expiresAt = links.expiresAt();
  const key = linkKey(links);
  const views = ctx.views;
  const cached = views.get(ctx.caller, input.params.id, key, expiresAt, ctx.runtime.now());
  if (cached) return { status: 200, body: cached, headers: JSON_TYPE };
  const snapshot = await ctx.runtime.jobs.get(ctx.caller, input.params.id);
  const view = jobView(snapshot, { ...links, expiresAt: () => expiresAt });
  return { status: 200, body: views.render(snapshot.job, key, expiresAt, view), headers: JSON_TYPE };
}

/**
 * GET /api/v2/jobs/{id}/logs: the log `GET /api/v2/jobs/{id}` embeds, under the same rules; 204
 * where there is none to show (no capture on this surface, not finished, the demo deployment).
 */
export async function getJobLogs(input: OperationInput<"getJobLogs">, ctx: HandlerContext): Promise<OperationResult<"getJobLogs">> {
  if (!ctx.runtime.surface.showsLogs(ctx.caller)) {
    // Still the caller's job or 404, exactly as GET of the job answers.
    await ctx.runtime.jobs.owned(ctx.caller, input.params.id);
    return { status: 204 };
  }
  const logs = await ctx.runtime.jobs.logs(ctx.caller, input.params.id);
  return logs ? { status: 200, body: logsView(logs) } : { status: 204 };
}

/** POST /api/v2/jobs/{id}/cancel */
export async function cancelJob(input: OperationInput<"cancelJob">, ctx: HandlerContext): Promise<OperationResult<"cancelJob">> {
  const snapshot = await ctx.runtime.jobs.cancel(ctx.caller, input.params.id);
  return { status: 200, body: jobView(snapshot, ctx.links()) };
}

/** GET /api/v2/jobs/{id}/workflow */
export async function getJobWorkflow(input: OperationInput<"getJobWorkflow">, ctx: HandlerContext): Promise<OperationResult<"getJobWorkflow">> {
  return { status: 200, body: { format: "api", workflow: await ctx.runtime.jobs.workflow(ctx.caller, input.params.id) } };
}
