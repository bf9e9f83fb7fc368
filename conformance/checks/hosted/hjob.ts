// HJOB (the project's extension group): ComfyUI's current job API on the hosted interface:
// GET /api/jobs (filters, sorting, offset paging, ComfyUI's 400s), GET /api/jobs/{id}, the two
// cancels, GET /api/features beside the socket's feature_flags, and a client's prompt_id on
// POST /api/prompt. A surface whose GET /api/jobs answers 404 does not serve the API: every check
// skips, saying so.
import { check, type T } from "../../check.ts";
import type { Exchange } from "../../machinery/http.ts";
import { HostedSocket } from "../../machinery/socket.ts";
import { pollJob, slowGraph, started, type JobRef } from "../support/jobs.ts";
import { hostedOnly, queuePrompt, queuePromptOk, waitHostedTerminal } from "../support/hosted-client.ts";
import { deepEqual } from "../support/support.ts";
import { simpleGraph } from "../support/workflows.ts";

const H = { when: hostedOnly, timeoutMs: 300_000 };

interface HostedJob {
  id: string;
  status: string;
  priority: number;
  create_time: number;
  execution_start_time?: number;
  execution_end_time?: number;
  workflow?: { prompt?: unknown; extra_data?: unknown };
  outputs?: unknown;
  execution_status?: unknown;
}
interface JobList {
  jobs: HostedJob[];
  pagination: { offset: number; limit: number | null; total: number; has_more: boolean };
}

/** Whether a hosted path belongs to ComfyUI's job API (this group's routes). */
export function isJobApiPath(path: string): boolean {
  return path === "/api/jobs" || path.startsWith("/api/jobs/") || path === "/api/features";
}

/** Skips the check where the surface does not serve ComfyUI's job API (GET /api/jobs answers 404). */
export async function skipUnlessJobApi(t: T): Promise<void> {
  await list(t, "?limit=1");
}

/** GET /api/jobs with a query; skips the check where the surface does not serve the job API. */
async function list(t: T, query = ""): Promise<{ ex: Exchange; body?: JobList }> {
  const ex = await t.http.request("GET", t.http.url(`/api/jobs${query}`));
  if (ex.status === 404) t.skip("GET /api/jobs answered 404: the surface does not serve ComfyUI's job API");
  const body = ex.json as JobList | undefined;
  return ex.status === 200 && Array.isArray(body?.jobs) ? { ex, body } : { ex };
}

/** A listing that must answer 200. */
async function listOk(t: T, query = ""): Promise<JobList> {
  const { ex, body } = await list(t, query);
  if (!body) t.fail(`GET /api/jobs${query} answered ${ex.status}`, ex);
  return body;
}

/** GET /api/jobs/{id}. */
async function getJob(t: T, id: string): Promise<{ ex: Exchange; job?: HostedJob }> {
  const ex = await t.http.request("GET", t.http.url(`/api/jobs/${encodeURIComponent(id)}`));
  return ex.status === 200 ? { ex, job: ex.json as HostedJob } : { ex };
}

/** POST /api/jobs/{id}/cancel; returns `cancelled`. */
async function cancelOne(t: T, id: string): Promise<boolean | undefined> {
  const ex = await t.http.request("POST", t.http.url(`/api/jobs/${encodeURIComponent(id)}/cancel`), { json: {} });
  t.expect(ex.status === 200, `POST /api/jobs/${id}/cancel answered ${ex.status}`, ex);
  const c = (ex.json as { cancelled?: unknown } | undefined)?.cancelled;
  return typeof c === "boolean" ? c : undefined;
}

/** Waits (through v2, where the prompt id is the job id) until a prompt has started. */
async function whenStarted(t: T, id: string): Promise<void> {
  const ref: JobRef = { job: { id } as JobRef["job"], from: t.http.url(`/api/v2/jobs/${id}`) };
  await pollJob(t, ref, `prompt ${id} starting`, (j) => started(j));
}

/** A prompt that finished, by its hosted status. */
async function finishedPrompt(t: T, extra: Record<string, unknown> = {}): Promise<string> {
  const prompt = simpleGraph();
  const { ex, id } = await queuePrompt(t, prompt, extra);
  if (!id) t.fail(`POST /api/prompt answered ${ex.status} without a prompt_id`, ex);
  await waitHostedTerminal(t, id);
  return id;
}

export default [
  check("HJOB-1 GET /api/jobs lists the caller's prompts with ComfyUI's fields and pagination", H, async (t: T) => {
    await list(t, "?limit=1");
    const id = await finishedPrompt(t);
    const page = await listOk(t, "?status=completed,failed,cancelled&limit=50");
    const p = page.pagination;
    t.expect(p.offset === 0 && p.limit === 50 && p.total >= page.jobs.length && p.has_more === p.total > page.jobs.length, `pagination ${JSON.stringify(p)}`);
    const mine = page.jobs.find((j) => j.id === id);
    t.need(mine, `the finished prompt ${id} is not among the 50 newest finished jobs`);
    t.expect(mine.status === "completed", `the prompt that succeeded is listed ${mine.status}`);
    t.expect(
      typeof mine.create_time === "number" && typeof mine.execution_end_time === "number",
      `a finished job without create_time or execution_end_time: ${JSON.stringify(mine)}`,
    );
    t.expect(mine.workflow === undefined, "a list entry carries the workflow, which only GET /api/jobs/{id} carries");
  }),

  check("HJOB-2 status filters, sort_by/sort_order order and limit/offset page the list without overlap", H, async (t: T) => {
    await list(t, "?limit=1");
    for (let i = 0; i < 3; i++) await finishedPrompt(t);
    const completed = await listOk(t, "?status=completed&limit=20");
    t.expect(
      completed.jobs.every((j) => j.status === "completed"),
      `status=completed lists ${[...new Set(completed.jobs.map((j) => j.status))].join(", ")}`,
    );
    const asc = await listOk(t, "?status=completed&sort_order=asc&limit=20");
    const times = asc.jobs.map((j) => j.create_time);
    t.expect(
      deepEqual(
        times,
        [...times].sort((a, b) => a - b),
      ),
      "sort_order=asc is not in create_time order",
    );
    const byDuration = await listOk(t, "?status=completed&sort_by=execution_duration&limit=20");
    const durations = byDuration.jobs.map((j) => (j.execution_end_time ?? 0) - (j.execution_start_time ?? 0));
    t.expect(
      deepEqual(
        durations,
        [...durations].sort((a, b) => b - a),
      ),
      "sort_by=execution_duration is not longest first",
    );
    // Oldest first, so that prompts finishing meanwhile land after the pages read.
    const seen: string[] = [];
    for (let offset = 0; offset < 3; offset++) {
      const page = await listOk(t, `?status=completed&sort_order=asc&limit=1&offset=${offset}`);
      t.expect(page.pagination.offset === offset && page.pagination.limit === 1, `pagination ${JSON.stringify(page.pagination)} at offset ${offset}`);
      t.expect(page.pagination.has_more === offset + page.jobs.length < page.pagination.total, `has_more ${JSON.stringify(page.pagination)}`);
      seen.push(...page.jobs.map((j) => j.id));
    }
    t.expect(new Set(seen).size === seen.length, `pages of one overlap: ${seen.join(", ")}`);
    t.expect(seen.length === 3, `three pages of one held ${seen.length} jobs after three prompts finished`);
  }),

  check("HJOB-3 a bad status, sort_by, sort_order, limit or offset is 400 with ComfyUI's {error} string", H, async (t: T) => {
    await list(t, "?limit=1");
    for (const query of ["status=nope", "status=pending,nope", "sort_by=nope", "sort_order=nope", "limit=0", "limit=x", "offset=x"]) {
      const ex = await t.http.request("GET", t.http.url(`/api/jobs?${query}`));
      t.expect(ex.status === 400 && typeof (ex.json as { error?: unknown })?.error === "string", `GET /api/jobs?${query} answered ${ex.status}`, ex);
    }
  }),

  check(
    "HJOB-4 GET /api/jobs/{id} returns the full job (graph, no secrets, outputs and status once finished); 404 for an unknown id or another caller's",
    H,
    async (t: T) => {
      await list(t, "?limit=1");
      const secret = `conformance-secret-${crypto.randomUUID()}`;
      const prompt = simpleGraph();
      const { ex: queued, id } = await queuePrompt(t, prompt, { extra_data: { api_key_vendor_org: secret } });
      if (!id) t.fail(`POST /api/prompt answered ${queued.status} without a prompt_id`, queued);
      await waitHostedTerminal(t, id);
      const { ex, job } = await getJob(t, id);
      t.need(job, `GET /api/jobs/${id} answered ${ex.status}`);
      t.expect(deepEqual(job.workflow?.prompt, prompt), "workflow.prompt is not the graph queued", ex);
      t.expect(!ex.text.includes(secret), "the job echoes the partner key of extra_data", ex);
      t.expect(!!job.outputs && typeof job.outputs === "object" && !!job.execution_status, "a finished job without outputs or execution_status", ex);
      const unknown = await getJob(t, crypto.randomUUID());
      t.expect(unknown.ex.status === 404, `an unknown id answered ${unknown.ex.status}`, unknown.ex);
      // Another caller (--other-token) has no job under this id: not listed, 404, not cancellable.
      const other = t.options.otherToken ? { apiKey: t.options.otherToken } : null;
      if (other) {
        const theirs = await t.http.request("GET", t.http.url(`/api/jobs/${id}`), { auth: other });
        t.expect(theirs.status === 404, `another caller's GET /api/jobs/${id} answered ${theirs.status}`, theirs);
        const listed = await t.http.request("GET", t.http.url("/api/jobs?limit=200"), { auth: other });
        t.expect(!listed.text.includes(id), "another caller's GET /api/jobs lists the prompt", listed);
        const cancel = await t.http.request("POST", t.http.url(`/api/jobs/${id}/cancel`), { json: {}, auth: other });
        t.expect(
          (cancel.json as { cancelled?: unknown } | undefined)?.cancelled === false,
          `another caller's cancel answered ${cancel.text.slice(0, 100)}`,
          cancel,
        );
      }
    },
  ),

  check("HJOB-5 POST /api/jobs/{id}/cancel stops a pending or running job; a finished or unknown id answers cancelled false", H, async (t: T) => {
    await list(t, "?limit=1");
    const running = await queuePromptOk(t, slowGraph(t));
    const pending = await queuePromptOk(t, slowGraph(t));
    await whenStarted(t, running);
    t.expect((await cancelOne(t, pending)) === true, "cancelling a pending (or running) prompt answered cancelled false");
    t.expect((await cancelOne(t, running)) === true, "cancelling a running prompt answered cancelled false");
    for (const id of [running, pending]) {
      const seen = await waitHostedTerminal(t, id);
      t.expect(seen[seen.length - 1] === "cancelled", `a cancelled prompt ended ${seen[seen.length - 1]}`);
      const { job } = await getJob(t, id);
      t.expect(job?.status === "cancelled", `GET /api/jobs/${id} says ${job?.status} after the cancel`);
    }
    t.expect((await cancelOne(t, running)) === false, "cancelling a finished prompt answered cancelled true");
    t.expect((await cancelOne(t, crypto.randomUUID())) === false, "cancelling an unknown id answered cancelled true");
  }),

  check("HJOB-6 POST /api/jobs/cancel cancels a batch; a malformed id is 400 invalid_ids and cancels nothing", H, async (t: T) => {
    await list(t, "?limit=1");
    const id = await queuePromptOk(t, slowGraph(t));
    const refused = await t.http.request("POST", t.http.url("/api/jobs/cancel"), { json: { job_ids: [id, "not-a-uuid"] } });
    const invalid = (refused.json as { invalid_ids?: unknown } | undefined)?.invalid_ids;
    t.expect(
      refused.status === 400 && Array.isArray(invalid) && invalid.includes("not-a-uuid"),
      `a batch with a malformed id answered ${refused.status}`,
      refused,
    );
    const { job } = await getJob(t, id);
    t.expect(job?.status !== "cancelled", "a refused batch cancelled its well-formed id");
    const ex = await t.http.request("POST", t.http.url("/api/jobs/cancel"), { json: { job_ids: [id, crypto.randomUUID()] } });
    t.expect(ex.status === 200 && (ex.json as { cancelled?: unknown })?.cancelled === true, `the batch answered ${ex.status}`, ex);
    const seen = await waitHostedTerminal(t, id);
    t.expect(seen[seen.length - 1] === "cancelled", `the cancelled prompt ended ${seen[seen.length - 1]}`);
  }),

  check("HJOB-7 GET /api/features answers the server's flags, the same as the socket's feature_flags answer", { when: hostedOnly }, async (t: T) => {
    await list(t, "?limit=1");
    const ex = await t.http.request("GET", t.http.url("/api/features"));
    t.need(ex.status === 200, `GET /api/features answered ${ex.status}`);
    const { socket, status } = await HostedSocket.open(t.http, { previewMetadata: true });
    if (!socket) t.fail(`/ws refused the upgrade (${status})`);
    t.defer(async () => socket.close());
    const flags = await t.until("the socket's feature_flags answer", async () => {
      const m = socket.messages.find((x) => x.kind === "json" && x.type === "feature_flags");
      return m?.kind === "json" ? m.data : undefined;
    });
    t.expect(deepEqual(flags, ex.json), `the socket says ${JSON.stringify(flags)}, GET /api/features ${ex.text.slice(0, 200)}`, ex);
  }),

  check(
    "HJOB-8 POST /api/prompt honours a canonical prompt_id as the job id, refuses others with invalid_prompt_id, and never runs an id twice",
    H,
    async (t: T) => {
      await list(t, "?limit=1");
      const id = crypto.randomUUID();
      const first = await queuePrompt(t, simpleGraph(), { prompt_id: id });
      t.need(first.id, `a prompt with prompt_id answered ${first.ex.status}`);
      t.expect(first.id === id, `the prompt was queued as ${first.id}, not the client's ${id}`, first.ex);
      const v2 = await t.http.request("GET", t.http.url(`/api/v2/jobs/${id}`));
      t.expect(v2.status === 200, `GET /api/v2/jobs/${id} answered ${v2.status}: the prompt id is not the job id`, v2);
      await waitHostedTerminal(t, id);
      const again = await queuePrompt(t, simpleGraph(), { prompt_id: id });
      const number = (ex: Exchange) => (ex.json as { number?: unknown } | undefined)?.number;
      t.expect(again.id === id && number(again.ex) === number(first.ex), "a prompt_id used before answered as another prompt", again.ex);
      const listed = await listOk(t, "?limit=200");
      t.expect(listed.jobs.filter((j) => j.id === id).length <= 1, "one prompt id is listed twice");
      const { job } = await getJob(t, id);
      t.expect(job?.status === "completed", `the resubmitted prompt is ${job?.status}: it ran again or changed`);
      for (const bad of [id.toUpperCase(), "not-a-uuid"]) {
        const refused = await queuePrompt(t, simpleGraph(), { prompt_id: bad });
        const type = (refused.ex.json as { error?: { type?: unknown } } | undefined)?.error?.type;
        t.expect(
          refused.ex.status === 400 && type === "invalid_prompt_id",
          `prompt_id ${JSON.stringify(bad)} answered ${refused.ex.status} ${String(type)}`,
          refused.ex,
        );
      }
    },
  ),
];
