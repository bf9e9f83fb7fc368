// HOST: the hosted routes no other check calls, each checked against a second observation of what
// it claims: a node's own definition against the full list, GET /api/prompt's count against
// /api/queue, an interrupt naming a prompt against that prompt's end (and no other's), a history
// deletion against the history and the job afterwards, and /api/view for each file type against
// the bytes it serves.
import { check, type T } from "../../check.ts";
import { signatureMismatch } from "../../machinery/bytes.ts";
import type { Exchange } from "../../machinery/http.ts";
import { hostedOnly, hostedStatus, queuePromptOk, uploadImage, view, waitHostedTerminal, whenStarted } from "../support/hosted-client.ts";
import { endedEarlyGraph } from "../support/jobs.ts";
import { deepEqual, mediaType, pngBytes } from "../support/support.ts";
import { nonce, simpleGraph, type Graph } from "../support/workflows.ts";

const H = { when: hostedOnly };

type FileInfo = { filename?: unknown; subfolder?: unknown; type?: unknown };

/** GET /api/history/{id}: the entry of a finished prompt, or undefined. */
async function historyEntry(t: T, id: string): Promise<{ ex: Exchange; entry?: { outputs?: Record<string, Record<string, unknown>> } }> {
  const ex = await t.http.request("GET", t.http.url(`/api/history/${encodeURIComponent(id)}`));
  const body = ex.json as Record<string, { outputs?: Record<string, Record<string, unknown>> }> | undefined;
  return { ex, entry: ex.status === 200 && body && typeof body === "object" ? body[id] : undefined };
}

/** Runs a graph through /api/prompt to success and returns its prompt id. */
async function promptToSuccess(t: T, graph: Graph): Promise<string> {
  const id = await queuePromptOk(t, graph);
  const seen = await waitHostedTerminal(t, id);
  t.need(seen[seen.length - 1] === "success", `the prompt ended ${seen[seen.length - 1]} (HOST-5)`);
  return id;
}

/** The first file info of a history entry's outputs. */
function firstFile(entry: { outputs?: Record<string, Record<string, unknown>> } | undefined): FileInfo | undefined {
  for (const node of Object.values(entry?.outputs ?? {}))
    for (const list of Object.values(node ?? {})) if (Array.isArray(list) && list[0] && typeof list[0] === "object") return list[0] as FileInfo;
  return undefined;
}

/** /api/view of a file info: the redirect, then bytes whose media type matches what they are. */
async function viewServes(t: T, info: FileInfo, what: string, expected?: Uint8Array): Promise<void> {
  const { redirect, file } = await view(t, { filename: String(info.filename), subfolder: String(info.subfolder ?? ""), type: String(info.type) });
  t.expect(redirect.status === 302, `${what}: GET /api/view answered ${redirect.status}, not 302`, redirect);
  if (!file) return;
  t.expect(file.status === 200, `${what}: the signed URL answered ${file.status}`, file);
  if (file.status !== 200) return;
  const ct = mediaType(file.headers.get("content-type"));
  const mismatch = signatureMismatch(ct, file.bytes);
  t.expect(!mismatch, `${what}: served as ${ct || "(no content-type)"}: ${mismatch}`, file);
  if (expected) t.expect(Buffer.compare(Buffer.from(file.bytes), Buffer.from(expected)) === 0, `${what}: the bytes served differ from the upload`, file);
}

export default [
  check("HOST-1 GET /api/object_info/{class} answers that class alone, as the full list defines it; GET /api/system_stats answers", H, async (t: T) => {
    const all = await t.http.request("GET", t.http.url("/api/object_info"));
    const defs = all.json as Record<string, unknown> | undefined;
    t.need(all.status === 200 && defs && typeof defs === "object", `GET /api/object_info answered ${all.status}`);
    const name = Object.hasOwn(defs, "SaveImage") ? "SaveImage" : Object.keys(defs)[0];
    t.need(name, "GET /api/object_info lists no node class");
    const one = await t.http.request("GET", t.http.url(`/api/object_info/${encodeURIComponent(name)}`));
    const body = one.json as Record<string, unknown> | undefined;
    t.expect(one.status === 200, `GET /api/object_info/${name} answered ${one.status}`, one);
    if (one.status === 200) {
      t.expect(!!body && Object.keys(body).length === 1 && Object.hasOwn(body, name), `GET /api/object_info/${name} is not keyed by ${name} alone`, one);
      t.expect(deepEqual(body?.[name], defs[name]), `GET /api/object_info/${name} differs from its entry in GET /api/object_info`, one);
    }
    const stats = await t.http.request("GET", t.http.url("/api/system_stats"));
    t.expect(stats.status === 200, `GET /api/system_stats answered ${stats.status}`, stats);
  }),

  check("HOST-7 GET /api/prompt's queue_remaining is the caller's queued and running prompts of /api/queue", { ...H, timeoutMs: 300_000 }, async (t: T) => {
    const counts = async () => {
      const q = await t.http.request("GET", t.http.url("/api/queue"));
      const b = q.json as { queue_running?: unknown[]; queue_pending?: unknown[] } | undefined;
      return Array.isArray(b?.queue_running) && Array.isArray(b?.queue_pending) ? b.queue_running.length + b.queue_pending.length : undefined;
    };
    const ids = [await queuePromptOk(t, endedEarlyGraph(t)), await queuePromptOk(t, endedEarlyGraph(t))];
    // Only a reading between two equal /api/queue counts is compared: the queue may move meanwhile.
    for (let tries = 0; tries < 10; tries++) {
      const before = await counts();
      const info = await t.http.request("GET", t.http.url("/api/prompt"));
      const after = await counts();
      const remaining = (info.json as { exec_info?: { queue_remaining?: unknown } } | undefined)?.exec_info?.queue_remaining;
      t.need(info.status === 200, `GET /api/prompt answered ${info.status}`);
      if (before === undefined || before !== after) continue;
      t.expect(
        remaining === before,
        `GET /api/prompt says queue_remaining ${JSON.stringify(remaining)} while /api/queue holds ${before} prompts of the caller`,
        info,
      );
      t.expect(before >= 1, `/api/queue holds no prompt while ${ids.join(", ")} are in flight`);
      return;
    }
    t.skip("the queue moved during every reading of GET /api/prompt (10 tries); nothing to compare");
  }),

  check("HOST-8 POST /api/interrupt {prompt_id} interrupts that prompt and no other", { ...H, timeoutMs: 300_000 }, async (t: T) => {
    const id = await queuePromptOk(t, endedEarlyGraph(t));
    await whenStarted(t, id);
    const other = await t.http.request("POST", t.http.url("/api/interrupt"), { json: { prompt_id: crypto.randomUUID() } });
    t.expect(other.status === 200, `POST /api/interrupt naming an unknown prompt answered ${other.status}`, other);
    const still = await hostedStatus(t, id);
    // It may have finished on its own meanwhile; it must not have been cancelled.
    t.expect(still.status !== "cancelled", `interrupting another prompt id cancelled the running prompt ${id}`, still.ex);
    const ex = await t.http.request("POST", t.http.url("/api/interrupt"), { json: { prompt_id: id } });
    t.expect(ex.status === 200, `POST /api/interrupt naming the prompt answered ${ex.status}`, ex);
    const seen = await waitHostedTerminal(t, id);
    t.expect(seen[seen.length - 1] === "cancelled", `the named prompt ended ${seen[seen.length - 1]}, not cancelled`);
  }),

  check("HOST-5 POST /api/history {delete} takes a finished prompt out of the history and nothing else", { ...H, timeoutMs: 300_000 }, async (t: T) => {
    const id = await promptToSuccess(t, simpleGraph());
    const before = await historyEntry(t, id);
    t.expect(!!before.entry, `GET /api/history/${id} has no entry for the finished prompt`, before.ex);
    const del = await t.http.request("POST", t.http.url("/api/history"), { json: { delete: [id] } });
    t.expect(del.status === 200, `POST /api/history {delete} answered ${del.status}`, del);
    const after = await historyEntry(t, id);
    t.expect(after.ex.status === 200 && !after.entry, `GET /api/history/${id} still has the entry after its deletion`, after.ex);
    const status = await hostedStatus(t, id);
    t.expect(status.status === "success", `after leaving the history the prompt's status is ${status.status}, not success`, status.ex);
    const file = firstFile(before.entry);
    if (file) await viewServes(t, file, "an output of a prompt taken out of the history");
  }),

  check("HOST-6 GET /api/view serves each file type (input, output, temp) with the media type of its bytes", { ...H, timeoutMs: 300_000 }, async (t: T) => {
    const bytes = pngBytes(6, 6, [nonce(255), 50, 50, 255]);
    const up = await uploadImage(t, bytes);
    const r = up.json as { name?: string; subfolder?: string };
    t.need(up.status === 200 && r?.name, `the upload answered ${up.status} (HOST-2)`);
    await viewServes(t, { filename: r.name, subfolder: r.subfolder ?? "", type: "input" }, "type input", bytes);
    const saved = firstFile((await historyEntry(t, await promptToSuccess(t, simpleGraph()))).entry);
    t.expect(saved?.type === "output", `a SaveImage output's file info has type ${JSON.stringify(saved?.type)}, not output`);
    if (saved) await viewServes(t, saved, "type output");
    const preview: Graph = {
      "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: nonce() } },
      "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
    };
    t.requireClasses(preview, "preview");
    const temp = firstFile((await historyEntry(t, await promptToSuccess(t, preview))).entry);
    t.expect(temp?.type === "temp", `a PreviewImage output's file info has type ${JSON.stringify(temp?.type)}, not temp`);
    if (temp) await viewServes(t, temp, "type temp");
  }),
];
