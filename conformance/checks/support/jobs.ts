// Job helpers for checks: submit with the generated client, then follow the job's own links as a
// client must (a host-relative link resolves against the origin of the answer that carried it).
// A link that does not lead where it should is reported under URL-2 or URL-3 and the helper goes
// on with the path the client would build, so that one broken link fails one rule.
import type { components } from "../../../generated/openapi-types.ts";
import type { Auth, Exchange } from "../../machinery/http.ts";
import { reachable, TERMINAL, JOB_STATUSES } from "../../machinery/contract.ts";
import { EventStream, type OpenOptions } from "../../machinery/stream.ts";
import type { T } from "../../check.ts";
import { defaultFailingGraph, defaultSlowGraph, defaultStepsGraph, withNonce, type Graph } from "./workflows.ts";

export type Job = components["schemas"]["Job"];

/** A job and the URL of the answer it came in (host-relative links resolve against its origin). */
export interface JobRef {
  job: Job;
  from: string;
  /** The answer it came in, for failure reports. */
  ex?: Exchange;
}

export interface SubmitOptions {
  key?: string;
  extraData?: Record<string, unknown>;
  auth?: Auth;
  /** Submit exactly this body instead of `{workflow, extra_data}`. */
  body?: Record<string, unknown>;
  /** The graph is expected to be valid: a 422 unknown_class means the surface lacks a node (skip). */
  valid?: boolean;
}

/** POST /api/v2/jobs with the generated client. */
export async function submit(t: T, workflow: unknown, o: SubmitOptions = {}): Promise<{ ex: Exchange; ref?: JobRef }> {
  const body = o.body ?? { workflow, ...(o.extraData ? { extra_data: o.extraData } : {}) };
  const api = o.auth ? t.client(o.auth) : t.api;
  const { response } = await api.POST("/api/v2/jobs", {
    body: body as never,
    headers: o.key ? { "Idempotency-Key": o.key } : {},
  });
  const ex = t.ex(response)!;
  if (o.valid !== false && ex.status === 422) skipOnUnknownClass(t, ex);
  // An unknown outcome: the HTTP layer has retried the key and judged the answer under IDEM-5.
  if (o.key && ex.status >= 500)
    t.skip(`the keyed submission answered ${ex.status} ${ex.text.slice(0, 120)} (an unknown outcome; its retry with the same key is judged under IDEM-5)`);
  if (ex.status !== 201 || !isJob(ex.json)) return { ex };
  const ref: JobRef = { job: ex.json, from: ex.url, ex };
  t.created.push(ref.job.id);
  t.defer(() => cleanup(t, ref, o.auth));
  return { ex, ref };
}

/** Submits a graph that must be accepted (201 with a job), else fails the check. */
export async function submitOk(t: T, workflow: unknown, o: SubmitOptions = {}): Promise<JobRef> {
  const { ex, ref } = await submit(t, workflow, o);
  if (!ref) t.fail(`the submission was not accepted (expected 201 with a job, got ${ex.status})`, ex);
  return ref;
}

function skipOnUnknownClass(t: T, ex: Exchange): void {
  const nodeErrors = (ex.json as { error?: { details?: { node_errors?: Record<string, Array<{ field?: string; reason?: string }>> } } })?.error?.details
    ?.node_errors;
  const unknown = Object.entries(nodeErrors ?? {}).filter(([, errs]) => Array.isArray(errs) && errs.some((e) => e?.reason === "unknown_class"));
  const graph = (JSON.parse(ex.requestBody ?? "{}") as { workflow?: Record<string, { class_type?: unknown }> })?.workflow ?? {};
  const named = unknown.map(([id]) => `${id} (${String(graph[id]?.class_type ?? "?")})`);
  if (unknown.length)
    t.skip(
      `the submission answered 422 unknown_class for node${unknown.length > 1 ? "s" : ""} ${named.join(", ")}; --slow-workflow, --steps-workflow or --failing-workflow with the nodes this surface has makes this apply`,
    );
}

/** Whether a value looks enough like a job to follow (the schema checks the rest). */
export function isJob(v: unknown): v is Job {
  return !!v && typeof v === "object" && typeof (v as { id?: unknown }).id === "string";
}

const SUFFIX = { self: "", events: "/events", cancel: "/cancel", logs: "/logs" } as const;
export type LinkName = keyof typeof SUFFIX;

/** Where a job's link leads (resolved against the origin of its answer) and where a client would build it. */
export function linkOf(t: T, ref: JobRef, name: LinkName): { url: string; fallback: string; link?: string; prefixed: boolean } {
  const fallback = t.http.url(`/api/v2/jobs/${encodeURIComponent(ref.job.id)}${SUFFIX[name]}`);
  const link = (ref.job.urls as Record<string, unknown> | undefined)?.[name];
  if (typeof link !== "string" || link === "") return { url: fallback, fallback, prefixed: true };
  let url: string;
  try {
    url = new URL(link, ref.from).toString();
  } catch {
    return { url: fallback, fallback, link, prefixed: true };
  }
  const expected = `${t.http.basePath}/api/v2/`;
  const prefixed = !link.startsWith("/") || link.startsWith(expected);
  if (!prefixed) t.http.violate("URL-2", `urls.${name} ${link} does not start with the mount prefix ${expected}`, undefined, `URL-2 ${name}`);
  else t.http.recorder.evaluated("URL-2");
  return { url, fallback, link, prefixed };
}

function linkBroken(t: T, name: LinkName, link: string | undefined, from: string, ex: Exchange | undefined, fallback: string): void {
  const what = ex ? `answers ${ex.status}` : "does not answer";
  t.http.violate("URL-3", `urls.${name} ${link} resolved against the origin of ${from} ${what}; the client-built ${fallback} works`, ex, `URL-3 ${name}`);
}

async function tryRequest(t: T, method: string, url: string, auth: Auth | undefined, fatal: boolean): Promise<Exchange | undefined> {
  try {
    return await t.http.request(method, url, { auth });
  } catch (err) {
    if (fatal) throw err;
    return undefined;
  }
}

/**
 * GETs a job's link as a client follows it (the client-built address where the job has none). A
 * link that answers 404 where the client-built address does not is URL-3's defect (URL-2's when
 * it lacks the prefix, reported by linkOf), and the client-built address's answer is returned.
 */
export async function getLink(t: T, ref: JobRef, name: LinkName, auth?: Auth): Promise<Exchange> {
  const { url, fallback, link, prefixed } = linkOf(t, ref, name);
  const first = await tryRequest(t, "GET", url, auth, url === fallback);
  if (url === fallback || (first && first.status !== 404)) return first!;
  const fb = await t.http.request("GET", fallback, { auth });
  if (fb.status !== 404 && prefixed) linkBroken(t, name, link, ref.from, first, fallback);
  return fb;
}

/** Reads a job by following urls.self. */
export async function readJob(t: T, ref: JobRef, auth?: Auth): Promise<{ ex: Exchange; ref?: JobRef }> {
  const { url, fallback, link, prefixed } = linkOf(t, ref, "self");
  const first = await tryRequest(t, "GET", url, auth, url === fallback);
  if (first?.status === 200 && isJob(first.json) && first.json.id === ref.job.id) {
    t.http.recorder.evaluated("URL-3");
    return found(t, first);
  }
  if (url === fallback) return { ex: first! };
  const fb = await t.http.request("GET", fallback, { auth });
  if (fb.status === 200 && isJob(fb.json)) {
    if (prefixed) linkBroken(t, "self", link, ref.from, first, fallback);
    return found(t, fb);
  }
  return { ex: first ?? fb };
}

function found(t: T, ex: Exchange): { ex: Exchange; ref: JobRef } {
  const job = ex.json as Job;
  observe(t, job, ex);
  return { ex, ref: { job, from: ex.url, ex } };
}

/** Reads a job that must be readable, else fails. */
export async function readJobOk(t: T, ref: JobRef, auth?: Auth): Promise<JobRef> {
  const { ex, ref: r } = await readJob(t, ref, auth);
  if (!r) t.fail(`reading job ${ref.job.id} answered ${ex.status}`, ex);
  return r;
}

/** ST-3 and ST-4 over the statuses one check reads in sequence. */
export function observe(t: T, job: Job, ex?: Exchange): void {
  const prev = t.lastStatus.get(job.id);
  const next = job.status as string;
  const known = (s: string) => (JOB_STATUSES as readonly string[]).includes(s);
  if (prev && prev !== next) {
    if (TERMINAL.has(prev)) t.http.violate("ST-4", `job went from terminal ${prev} to ${next}`, ex, `ST-4 ${prev}->${next}`);
    else if (known(prev) && known(next) && !reachable(prev, next)) t.http.violate("ST-3", `job moved ${prev} -> ${next}`, ex, `ST-3 ${prev}->${next}`);
    else t.http.recorder.evaluated("ST-3");
  }
  t.lastStatus.set(job.id, next);
  // A status outside the enum may never turn terminal: waits stop at once rather than at the
  // timeout. The answer's validation reports it under ST-1.
  if (!known(next)) t.waitingStopped = `job ${job.id} is in status ${JSON.stringify(next)}, outside the contract's statuses (reported under ST-1)`;
}

/** POST urls.cancel. */
export async function cancelJob(t: T, ref: JobRef, auth?: Auth): Promise<{ ex: Exchange; ref?: JobRef }> {
  const { url, fallback, link, prefixed } = linkOf(t, ref, "cancel");
  const first = await tryRequest(t, "POST", url, auth, url === fallback);
  if (first && first.status === 200 && isJob(first.json)) return { ex: first, ref: { job: first.json, from: first.url, ex: first } };
  // Only a link that leads nowhere is retried; any other answer is the server's answer to the cancel.
  if (url !== fallback && (!first || first.status === 404 || first.status === 405)) {
    const fb = await t.http.request("POST", fallback, { auth });
    if (fb.status === 200 && isJob(fb.json)) {
      if (prefixed) linkBroken(t, "cancel", link, ref.from, first, fallback);
      return { ex: fb, ref: { job: fb.json, from: fb.url, ex: fb } };
    }
    if (!first) return { ex: fb };
  }
  return { ex: first! };
}

/** Opens urls.events. */
export async function openEvents(t: T, ref: JobRef, opts: OpenOptions = {}): Promise<{ stream?: EventStream; ex?: Exchange }> {
  const { url, fallback, link, prefixed } = linkOf(t, ref, "events");
  let first: { stream?: EventStream; ex?: Exchange } | undefined;
  try {
    first = await EventStream.open(t.http, url, opts);
  } catch (err) {
    if (url === fallback) throw err;
  }
  if (first?.stream) {
    const s = first.stream;
    t.defer(async () => s.close());
    return first;
  }
  if (url !== fallback) {
    const fb = await EventStream.open(t.http, fallback, opts);
    if (fb.stream) {
      const s = fb.stream;
      t.defer(async () => s.close());
      if (prefixed) linkBroken(t, "events", link, ref.from, first?.ex, fallback);
      return fb;
    }
    return first ?? fb;
  }
  return first!;
}

export interface PollOptions {
  timeoutMs?: number;
  auth?: Auth;
}

/** Polls the job (urls.self) until pred holds. */
export async function pollJob(t: T, ref: JobRef, what: string, pred: (j: Job) => boolean, o: PollOptions = {}): Promise<JobRef> {
  return t.until(
    what,
    async () => {
      const r = await readJobOk(t, ref, o.auth);
      return pred(r.job) ? r : undefined;
    },
    o.timeoutMs,
  );
}

/** Polls until the job is in a terminal status. */
export function waitTerminal(t: T, ref: JobRef, o: PollOptions = {}): Promise<JobRef> {
  return pollJob(t, ref, `job ${ref.job.id} reaching a terminal status`, (j) => TERMINAL.has(j.status), o);
}

/** How a finished job ended, in words, for a skip: its status, and its error where it failed. */
export function endOf(j: Job): string {
  const e = j.error;
  return `ended ${j.status}${e ? ` (${e.code}: ${JSON.stringify(String(e.message).slice(0, 100))}${e.node_id ? ` at node ${e.node_id}${e.class_type ? ` ${e.class_type}` : ""}` : ""})` : ""}`;
}

/** Whether a job has started running (or gone further). */
export function started(j: Job): boolean {
  return j.status !== "queued" || j.started_at != null;
}

async function cleanup(t: T, ref: JobRef, auth?: Auth): Promise<void> {
  if (TERMINAL.has(t.lastStatus.get(ref.job.id) ?? ref.job.status)) return;
  await t.http.request("POST", t.http.url(`/api/v2/jobs/${encodeURIComponent(ref.job.id)}/cancel`), { auth, raw: true }).catch(() => undefined);
}

/** The slow graph (from --slow-workflow or the default), skipping when the surface lacks its nodes. */
export function slowGraph(t: T, seconds = t.options.slowSeconds): Graph {
  const g = t.options.slowWorkflow ? withNonce(t.options.slowWorkflow) : defaultSlowGraph(seconds);
  t.requireClasses(g, "slow");
  return g;
}

/** The graph with a stepped node (from --steps-workflow or the default). */
export function stepsGraph(t: T): Graph {
  const g = t.options.stepsWorkflow ? withNonce(t.options.stepsWorkflow) : defaultStepsGraph();
  t.requireClasses(g, "steps");
  return g;
}

/** The graph that fails while running (from --failing-workflow or the default). */
export function failingGraph(t: T): Graph {
  const g = t.options.failingWorkflow ? withNonce(t.options.failingWorkflow) : defaultFailingGraph();
  t.requireClasses(g, "failing");
  return g;
}

/** A job that stays queued for a while: slow jobs are submitted until one waits behind another queued job. */
export async function queuedJob(t: T, max = 8): Promise<{ target: JobRef; blockers: JobRef[] }> {
  const blockers: JobRef[] = [];
  for (let i = 0; i < max; i++) {
    const ref = await submitOk(t, slowGraph(t));
    const now = await readJobOk(t, ref);
    if (now.job.status === "queued") {
      for (const b of blockers) {
        const r = await readJobOk(t, b);
        if (r.job.status === "queued") return { target: now, blockers };
      }
    }
    blockers.push(now);
  }
  t.skip(
    `no job stayed queued behind another: ${max} slow jobs read as ${JSON.stringify(blockers.map((b) => b.job.status))} right after their submissions (a --slow-workflow with a slower graph makes this apply)`,
  );
}

export type Output = components["schemas"]["Output"];

/** Downloads an output's url as a client must: no credentials, a redirect followed without them. */
export async function download(t: T, url: string): Promise<Exchange> {
  let ex = await t.http.request("GET", url, { auth: "none" });
  for (let hops = 0; hops < 3 && ex.status >= 300 && ex.status < 400; hops++) {
    const loc = ex.headers.get("location");
    if (!loc) break;
    ex = await t.http.request("GET", new URL(loc, ex.url).toString(), { auth: "none", raw: true });
  }
  return ex;
}

/** Submits a graph and waits for its terminal status. */
export async function runToEnd(t: T, workflow: unknown, o: SubmitOptions = {}): Promise<JobRef> {
  return waitTerminal(t, await submitOk(t, workflow, o));
}

/** Runs a graph that must succeed, else fails the check. */
export async function runOk(t: T, workflow: unknown, o: SubmitOptions = {}): Promise<JobRef> {
  const ref = await runToEnd(t, workflow, o);
  if (ref.job.status !== "succeeded")
    t.fail(`the job ended ${ref.job.status}, expected succeeded${ref.job.error ? `: ${ref.job.error.code} ${ref.job.error.message}` : ""}`);
  return ref;
}
