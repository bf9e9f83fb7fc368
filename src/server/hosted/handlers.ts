// REST handlers of the hosted compatibility interface: thin mappings onto the job lifecycle.
import os from "node:os";
import type { HostedHandlers, OperationInput, OperationResult } from "../../../generated/handlers.ts";
import type { components } from "../../../generated/openapi-types.ts";
import { BlobNotFoundError } from "../../blobs/errors.ts";
import { ServiceError } from "../../domain/errors.ts";
import { isCanonicalUuid } from "../../domain/ids.ts";
import { VERSION } from "../../domain/version.ts";
import { isTerminalStatus, type AssetRecord, type JobRecord } from "../../store/index.ts";
import type { HandlerContext } from "../handler-context.ts";
import type { Runtime } from "../../runtime/runtime.ts";
import { signedContentUrl } from "../views.ts";
import { historyEntry, nodeOutputs, queueEntry } from "./comfy-shapes.ts";
import { serverFeatures } from "./features.ts";
import { assertSafeName } from "./file-names.ts";
import { hostedErrorBody, InvalidPromptError } from "./hosted-errors.ts";
import { JobListQueryError, readJobListQuery } from "./job-list-query.ts";
import { fullJob, jobStatusesOf, jobSummary } from "./job-views.ts";
import { hostedStatus } from "./status-map.ts";
import { uploadImage, uploadMask } from "./uploads.ts";

const TEXT_INLINE_LIMIT = 64 * 1024;
/** `GET /queue` lists this many pending jobs from the front of the caller's queue. */
export const QUEUE_PENDING_LIMIT = 1000;
/** Pending jobs canceled per store read by `POST /queue {clear}`. */
const CLEAR_PAGE = 1000;
/** Cancels in flight at once: their commits share fsyncs instead of waiting for one each. */
const CANCEL_CONCURRENCY = 100;

/**
 * Reads small text outputs so history and `executed` can carry them inline, as ComfyUI does. A
 * text whose bytes are missing from this node's blob store stays a file entry: one lost blob must
 * not take the whole history down (its /view answers 404).
 */
export async function inlineTexts(runtime: Runtime, assets: readonly AssetRecord[]): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  for (const a of assets) {
    if (a.type !== "text" || a.size_bytes > TEXT_INLINE_LIMIT) continue;
    try {
      const chunks: Buffer[] = [];
      for await (const c of await runtime.assets.open(a)) chunks.push(c as Buffer);
      texts.set(a.id, Buffer.concat(chunks).toString("utf8"));
    } catch (err) {
      if (!(err instanceof BlobNotFoundError)) throw err;
    }
  }
  return texts;
}

async function history(ctx: HandlerContext, jobs: readonly JobRecord[]): Promise<components["schemas"]["HostedHistory"]> {
  const out: components["schemas"]["HostedHistory"] = {};
  for (const job of jobs) {
    const { workflow, outputs } = await ctx.runtime.jobs.graphAndOutputs(job);
    out[job.id] = historyEntry(job, workflow, nodeOutputs(outputs, await inlineTexts(ctx.runtime, outputs)));
  }
  return out;
}

/**
 * Cancels the caller's jobs by id, some at a time. Ids it cannot cancel (unknown, not its own)
 * are skipped, as ComfyUI does; a failure of the store fails the request once every cancel of
 * its group has settled (the caller retries; what was canceled stays canceled).
 */
async function cancelEach(ctx: HandlerContext, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += CANCEL_CONCURRENCY) {
    const outcomes = await Promise.allSettled(ids.slice(i, i + CANCEL_CONCURRENCY).map((id) => ctx.runtime.jobs.cancel(ctx.caller, id)));
    const failure = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected" && !(o.reason instanceof ServiceError));
    if (failure) throw failure.reason;
  }
}

/** The workflow id a ComfyUI frontend sends in `extra_data.extra_pnginfo.workflow.id` (read as ComfyUI's jobs.py reads it), or undefined. */
function workflowIdOf(extraData: unknown): unknown {
  const field = (value: unknown, key: string): unknown =>
    typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
  return field(field(field(extraData, "extra_pnginfo"), "workflow"), "id");
}

/** Jobs of one `GET /api/jobs` page at most (ComfyUI has no bound; `has_more` tells a client without a limit that more follow). */
export const JOB_LIST_PAGE_MAX = 1000;

/** The node outputs of a page of jobs in ComfyUI's shape (text inline), their records read at once. */
async function outputsOfPage(ctx: HandlerContext, jobs: readonly JobRecord[]): Promise<Array<ReturnType<typeof nodeOutputs>>> {
  const byJob = await ctx.runtime.jobs.outputsOfJobs(jobs);
  return Promise.all(
    jobs.map(async (job) => {
      const outputs = byJob.get(job.id) ?? [];
      return nodeOutputs(outputs, await inlineTexts(ctx.runtime, outputs));
    }),
  );
}

/**
 * Cancels one of the caller's jobs by id: true when it was pending or running and is now stopped.
 * The cancel itself tries pending then running, so a job that starts in between is still stopped;
 * finished, unknown and other callers' ids are no-ops.
 */
async function cancelJobById(ctx: HandlerContext, id: string): Promise<boolean> {
  const job = isCanonicalUuid(id) ? await findJob(ctx, id) : null;
  if (!job || isTerminalStatus(job.status) || job.status === "canceling") return false;
  const after = await ctx.runtime.jobs.cancel(ctx.caller, id).catch((err: unknown) => {
    if (err instanceof ServiceError) return null; // gone meanwhile (expired and purged)
    throw err;
  });
  return after !== null && (after.job.status === "canceled" || after.job.status === "canceling");
}

/** The answer to a prompt id already used: the existing job's, when it is the caller's. */
async function promptAgain(ctx: HandlerContext, id: string): Promise<OperationResult<"hostedQueuePrompt"> | null> {
  const job = await findJob(ctx, id);
  return job ? { status: 200, body: { prompt_id: job.id, number: job.seq, node_errors: {} } } : null;
}

/** ComfyUI's 400 for a client prompt id it does not take. */
function invalidPromptId(message: string): OperationResult<"hostedQueuePrompt"> {
  return {
    status: 400,
    body: {
      ...hostedErrorBody(
        "invalid_prompt_id",
        message,
        "prompt_id must be a UUID string in canonical lowercase hyphenated form; omit it to let the server generate one",
      ),
      node_errors: {},
    },
  };
}

/** The caller's job by prompt id, or null; a failing database is an outage, not an unknown prompt. */
async function findJob(ctx: HandlerContext, id: string): Promise<JobRecord | null> {
  return ctx.runtime.jobs.owned(ctx.caller, id).catch((err: unknown) => {
    if (err instanceof ServiceError && err.code === "not_found") return null;
    throw err;
  });
}

export const hostedHandlers: HostedHandlers<HandlerContext> = {
  async hostedGetObjectInfo(_input, ctx): Promise<OperationResult<"hostedGetObjectInfo">> {
    return { status: 200, body: await ctx.runtime.engine.nodeDefinitions() };
  },

  async hostedGetNodeInfo(input: OperationInput<"hostedGetNodeInfo">, ctx): Promise<OperationResult<"hostedGetNodeInfo">> {
    const defs = await ctx.runtime.engine.nodeDefinitions();
    const def = Object.hasOwn(defs, input.params.node_class) ? defs[input.params.node_class] : undefined;
    return { status: 200, body: def ? { [input.params.node_class]: def } : {} };
  },

  async hostedUploadImage(_input, ctx): Promise<OperationResult<"hostedUploadImage">> {
    return { status: 200, body: await uploadImage(ctx) };
  },

  async hostedUploadMask(_input, ctx): Promise<OperationResult<"hostedUploadMask">> {
    return { status: 200, body: await uploadMask(ctx) };
  },

  async hostedQueuePrompt(input: OperationInput<"hostedQueuePrompt">, ctx): Promise<OperationResult<"hostedQueuePrompt">> {
    const prompt = input.body.prompt as Record<string, unknown>;
    const key = input.body.extra_data?.api_key_vendor_org;
    // As ComfyUI: absent or null lets the server choose; anything else must be a canonical UUID.
    const given = (input.body as { prompt_id?: unknown }).prompt_id ?? undefined;
    if (given !== undefined && !isCanonicalUuid(given)) return invalidPromptId("prompt_id must be a valid UUID");
    if (given !== undefined) {
      // An id already used never starts a second run: the caller gets its existing prompt back.
      const again = await promptAgain(ctx, given);
      if (again) return again;
      if (await ctx.runtime.jobs.exists(given)) return invalidPromptId("prompt_id is already in use");
    }
    try {
      const { job } = await ctx.runtime.jobs.submit(ctx.caller, {
        workflow: prompt,
        extra_data: key === undefined ? undefined : { api_key_vendor_org: key },
        id: given,
        workflow_id: workflowIdOf(input.body.extra_data),
      });
      return { status: 200, body: { prompt_id: job.id, number: job.seq, node_errors: {} } };
    } catch (err) {
      // A concurrent submission of the same id won the insert: answer as for it.
      if (given !== undefined && !(err instanceof ServiceError)) {
        const again = await promptAgain(ctx, given);
        if (again) return again;
      }
      if (err instanceof ServiceError && err.code === "invalid_workflow") {
        // The hosted interface answers with ComfyUI's own body of the errors.
        const v = await ctx.runtime.engine.validate(prompt);
        throw new InvalidPromptError(err, v.ok ? null : (v.comfy ?? null));
      }
      throw err;
    }
  },

  async hostedGetPromptInfo(_input, ctx): Promise<OperationResult<"hostedGetPromptInfo">> {
    return { status: 200, body: { exec_info: { queue_remaining: await ctx.runtime.jobs.remaining(ctx.caller) } } };
  },

  async hostedGetJobStatus(input: OperationInput<"hostedGetJobStatus">, ctx): Promise<OperationResult<"hostedGetJobStatus">> {
    const job = await findJob(ctx, input.params.prompt_id);
    if (!job) throw new ServiceError("not_found", "No such prompt.");
    return { status: 200, body: { status: hostedStatus(job) } };
  },

  async hostedView(input: OperationInput<"hostedView">, ctx): Promise<OperationResult<"hostedView">> {
    const { filename } = input.query;
    const subfolder = input.query.subfolder ?? "";
    assertSafeName(filename, "filename", false);
    assertSafeName(subfolder, "subfolder", true);
    const folder = input.query.type ?? "output";
    const asset = await ctx.runtime.assets.findByName(ctx.caller.owner, filename, folder);
    if (!asset) throw new ServiceError("not_found", "No such file.");
    // Straight to the bucket when blobs live in one (a presigned GET, valid as long as a signed link); else this server's signed link.
    const links = ctx.links();
    const direct = await ctx.runtime.assets.directUrl(asset, links.expiresAt());
    return { status: 302, headers: { location: direct ?? signedContentUrl(asset.id, links).url, "cache-control": "no-store" } };
  },

  async hostedGetQueue(_input, ctx): Promise<OperationResult<"hostedGetQueue">> {
    // Two reads: the queued first, then the running. A job that starts between them is read in
    // both and listed once, as running; read the other way round, it would be in neither.
    const queued = await ctx.runtime.jobs.queued(ctx.caller, QUEUE_PENDING_LIMIT);
    const running = await ctx.runtime.jobs.running(ctx.caller);
    const started = new Set(running.map((j) => j.id));
    const pending = queued.filter((j) => !started.has(j.id));
    const entries = (jobs: JobRecord[]) => Promise.all(jobs.map(async (j) => queueEntry(j, await ctx.runtime.jobs.graphOf(j))));
    return { status: 200, body: { queue_running: await entries(running), queue_pending: await entries(pending) } };
  },

  async hostedManageQueue(input: OperationInput<"hostedManageQueue">, ctx): Promise<OperationResult<"hostedManageQueue">> {
    if (input.body.clear) {
      // Every pending job of the caller, however deep the queue: page through it in FIFO order.
      for (let after = 0; ; ) {
        const page = await ctx.runtime.jobs.queued(ctx.caller, CLEAR_PAGE, after);
        await cancelEach(
          ctx,
          page.map((job) => job.id),
        );
        if (page.length < CLEAR_PAGE) break;
        after = page[page.length - 1]!.seq;
      }
    }
    await cancelEach(ctx, [...new Set(input.body.delete ?? [])]);
    return { status: 200 };
  },

  async hostedInterrupt(input: OperationInput<"hostedInterrupt">, ctx): Promise<OperationResult<"hostedInterrupt">> {
    const target = input.body?.prompt_id;
    const jobs = target ? [await findJob(ctx, target)] : await ctx.runtime.jobs.running(ctx.caller);
    for (const job of jobs) if (job && job.status === "running") await ctx.runtime.jobs.cancel(ctx.caller, job.id);
    return { status: 200 };
  },

  async hostedGetHistory(input: OperationInput<"hostedGetHistory">, ctx): Promise<OperationResult<"hostedGetHistory">> {
    const limit = input.query?.max_items ?? 200;
    // As ComfyUI: the most recent max_items entries, listed oldest first.
    const newestFirst = await ctx.runtime.jobs.finished(ctx.caller, Math.min(limit, 1000));
    return { status: 200, body: await history(ctx, [...newestFirst].reverse()) };
  },

  async hostedGetHistoryEntry(input: OperationInput<"hostedGetHistoryEntry">, ctx): Promise<OperationResult<"hostedGetHistoryEntry">> {
    const job = await findJob(ctx, input.params.prompt_id);
    return { status: 200, body: job && (await ctx.runtime.jobs.inHistory(job)) ? await history(ctx, [job]) : {} };
  },

  async hostedManageHistory(input: OperationInput<"hostedManageHistory">, ctx): Promise<OperationResult<"hostedManageHistory">> {
    // ComfyUI clears first, then deletes; a live prompt is not in history, so it stays.
    if (input.body.clear === true) await ctx.runtime.jobs.leaveHistory(ctx.caller, null);
    if (input.body.delete !== undefined) await ctx.runtime.jobs.leaveHistory(ctx.caller, input.body.delete);
    return { status: 200 };
  },

  async hostedListJobs(input: OperationInput<"hostedListJobs">, ctx): Promise<OperationResult<"hostedListJobs">> {
    let query: ReturnType<typeof readJobListQuery>;
    try {
      query = readJobListQuery(input.query ?? {});
    } catch (err) {
      if (err instanceof JobListQueryError) return { status: 400, body: { error: err.message } };
      throw err;
    }
    const pagination = (total: number, count: number) => ({ offset: query.offset, limit: query.limit, total, has_more: query.offset + count < total });
    const page = await ctx.runtime.jobs.atOffset(ctx.caller, {
      ...(query.statuses ? { status: jobStatusesOf(query.statuses) } : {}),
      ...(query.workflowId === null ? {} : { workflow_id: query.workflowId }),
      sort: query.sort,
      descending: query.descending,
      limit: Math.min(query.limit ?? JOB_LIST_PAGE_MAX, JOB_LIST_PAGE_MAX),
      offset: query.offset,
    });
    const outputs = await outputsOfPage(ctx, page.jobs);
    const jobs = page.jobs.map((job, i) => jobSummary(job, outputs[i]!));
    return { status: 200, body: { jobs, pagination: pagination(page.total, jobs.length) } };
  },

  async hostedGetJob(input: OperationInput<"hostedGetJob">, ctx): Promise<OperationResult<"hostedGetJob">> {
    const job = isCanonicalUuid(input.params.job_id) ? await findJob(ctx, input.params.job_id) : null;
    // A finished prompt taken out of the history is gone for this API, as in ComfyUI.
    if (!job || (isTerminalStatus(job.status) && !(await ctx.runtime.jobs.inHistory(job)))) return { status: 404, body: { error: "Job not found" } };
    const { workflow, outputs } = await ctx.runtime.jobs.graphAndOutputs(job);
    return { status: 200, body: fullJob(job, workflow, nodeOutputs(outputs, await inlineTexts(ctx.runtime, outputs))) };
  },

  async hostedCancelJob(input: OperationInput<"hostedCancelJob">, ctx): Promise<OperationResult<"hostedCancelJob">> {
    return { status: 200, body: { cancelled: await cancelJobById(ctx, input.params.job_id) } };
  },

  async hostedCancelJobs(input: OperationInput<"hostedCancelJobs">, ctx): Promise<OperationResult<"hostedCancelJobs">> {
    const ids: unknown[] = input.body.job_ids;
    // Every id is checked before anything is canceled, as ComfyUI does.
    const invalid = ids.filter((id) => !isCanonicalUuid(id)).map((id) => (typeof id === "string" ? id : JSON.stringify(id)));
    if (invalid.length > 0) return { status: 400, body: { error: "job_ids contains invalid id(s)", invalid_ids: invalid } };
    const outcomes = await Promise.all([...new Set(ids as string[])].map((id) => cancelJobById(ctx, id)));
    return { status: 200, body: { cancelled: outcomes.includes(true) } };
  },

  async hostedGetFeatures(_input, ctx): Promise<OperationResult<"hostedGetFeatures">> {
    return { status: 200, body: serverFeatures(ctx.runtime) };
  },

  async hostedGetSystemStats(): Promise<OperationResult<"hostedGetSystemStats">> {
    return {
      status: 200,
      body: {
        system: {
          os: process.platform,
          comfyui_version: `flowgate ${VERSION}`,
          python_version: `node ${process.versions.node}`,
          embedded_python: false,
          argv: ["flowgate", "serve"],
          ram_total: os.totalmem(),
          ram_free: os.freemem(),
        },
        devices: [{ name: "cpu", type: "cpu", index: 0, vram_total: 0, vram_free: 0, torch_vram_total: 0, torch_vram_free: 0 }],
      },
    };
  },

  hostedWebSocket(): OperationResult<"hostedWebSocket"> {
    throw new ServiceError("invalid_request", "Expected a WebSocket upgrade.");
  },
};
