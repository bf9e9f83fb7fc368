// Helpers for the hosted interface checks (HOST-*, WS-*): prompts, statuses, uploads, /api/view.
import { TERMINAL_HOSTED_JOB_STATUSES } from "../../../generated/enums.ts";
import type { Applicability, T } from "../../check.ts";
import type { Exchange } from "../../machinery/http.ts";
import { pollJob, started, type JobRef } from "./jobs.ts";
import { multipart, type Part } from "./support.ts";
import { nonce } from "./workflows.ts";

/** Hosted checks run only where GET /api/object_info answered. */
export const hostedOnly: Applicability = (r) => (r.caps.hosted ? undefined : notHosted(r.caps.hostedProbe));

/** Why the hosted checks do not apply: what the probe saw (the hosted interface is under <base>/api). */
export function notHosted(probe = "GET /api/object_info did not answer 200"): string {
  return `${probe}, so the hosted interface is not served under this base URL`;
}

/** The hosted terminal statuses (HOST-5); every other value is in flight. */
export const HOSTED_TERMINAL: ReadonlySet<string> = new Set(TERMINAL_HOSTED_JOB_STATUSES);

/** POST /api/prompt; returns the exchange and the prompt id when queued. */
export async function queuePrompt(t: T, prompt: unknown, extra: Record<string, unknown> = {}): Promise<{ ex: Exchange; id?: string }> {
  const ex = await t.http.request("POST", t.http.url("/api/prompt"), { json: { prompt, client_id: crypto.randomUUID(), ...extra } });
  const id = (ex.json as { prompt_id?: unknown } | undefined)?.prompt_id;
  if (ex.status === 200 && typeof id === "string") {
    t.defer(async () => void (await t.http.request("POST", t.http.url("/api/queue"), { json: { delete: [id] }, raw: true }).catch(() => undefined)));
    return { ex, id };
  }
  return { ex };
}

/** Queues a prompt that must be accepted. */
export async function queuePromptOk(t: T, prompt: unknown): Promise<string> {
  const { ex, id } = await queuePrompt(t, prompt);
  if (!id) t.fail(`POST /api/prompt answered ${ex.status} without a prompt_id`, ex);
  return id;
}

/** GET /api/job/{id}/status. */
export async function hostedStatus(t: T, id: string): Promise<{ ex: Exchange; status?: string }> {
  const ex = await t.http.request("GET", t.http.url(`/api/job/${encodeURIComponent(id)}/status`));
  const s = (ex.json as { status?: unknown } | undefined)?.status;
  return { ex, status: typeof s === "string" ? s : undefined };
}

/** Polls the hosted status until a terminal value; returns every distinct value seen, in order. */
export async function waitHostedTerminal(t: T, id: string): Promise<string[]> {
  const seen: string[] = [];
  await t.until(`prompt ${id} reaching a terminal status`, async () => {
    const { ex, status } = await hostedStatus(t, id);
    if (!status) t.fail(`GET /api/job/${id}/status answered ${ex.status} without a status`, ex);
    if (seen[seen.length - 1] !== status) seen.push(status);
    return HOSTED_TERMINAL.has(status) ? status : undefined;
  });
  return seen;
}

/** POST /api/upload/image (or mask) as multipart with the given parts. */
export async function uploadHosted(t: T, kind: "image" | "mask", parts: Part[], boundary?: string): Promise<Exchange> {
  const { body, contentType } = multipart(parts, boundary);
  return t.http.request("POST", t.http.url(`/api/upload/${kind}`), { body, headers: { "content-type": contentType } });
}

/** GET /api/view for a file info, then the redirect target without the API key. */
export async function view(t: T, info: { filename: string; subfolder?: string; type?: string }): Promise<{ redirect: Exchange; file?: Exchange }> {
  const q = new URLSearchParams({ filename: info.filename, subfolder: info.subfolder ?? "", type: info.type ?? "output" });
  const redirect = await t.http.request("GET", t.http.url(`/api/view?${q}`));
  const loc = redirect.headers.get("location");
  if (redirect.status !== 302 || !loc) return { redirect };
  // The signed URL carries its own authorization: the key must not reach the storage host.
  const file = await t.http.request("GET", new URL(loc, redirect.url).toString(), { auth: "none", raw: true });
  return { redirect, file };
}

/** Waits (through v2, where the prompt id is the job id) until a hosted prompt has started. */
export async function whenStarted(t: T, id: string): Promise<void> {
  const ref: JobRef = { job: { id } as JobRef["job"], from: t.http.url(`/api/v2/jobs/${id}`) };
  await pollJob(t, ref, `prompt ${id} starting`, (j) => started(j));
}

/** POST /api/upload/image of a PNG as an input file, with extra form fields. */
export async function uploadImage(t: T, bytes: Uint8Array, extra: Record<string, string> = {}, boundary?: string): Promise<Exchange> {
  return uploadHosted(
    t,
    "image",
    [
      { name: "image", value: bytes, filename: `conformance_${nonce()}.png`, contentType: "image/png" },
      { name: "type", value: "input" },
      ...Object.entries(extra).map(([name, value]) => ({ name, value })),
    ],
    boundary,
  );
}
