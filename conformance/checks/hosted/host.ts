// HOST: the hosted compatibility interface under /api: node definitions, uploads, prompts and
// their statuses, /api/view, the queue, interrupt, errors and client-set multipart boundaries.
import { check, type T } from "../../check.ts";
import { sendNegatives } from "../requests/err.ts";
import { isJobApiPath, skipUnlessJobApi } from "./hjob.ts";
import {
  HOSTED_TERMINAL,
  hostedOnly,
  hostedStatus,
  queuePrompt,
  queuePromptOk,
  uploadHosted,
  uploadImage,
  view,
  waitHostedTerminal,
  whenStarted,
} from "../support/hosted-client.ts";
import { failingGraph, endedEarlyGraph } from "../support/jobs.ts";
import { operationsWithInput } from "../requests/negative.ts";
import { pngBytes } from "../support/support.ts";
import { missingInputGraph, nonce, simpleGraph, uploadGraph } from "../support/workflows.ts";
import { NON_RETRYABLE_JOB_ERROR_CODES } from "../../../generated/enums.ts";

const H = { when: hostedOnly };

export default [
  check("HOST-1 GET /api/object_info lists node definitions keyed by class name, each with input.required", { ...H, static: true }, async (t: T) => {
    const ex = await t.http.request("GET", t.http.url("/api/object_info"));
    t.need(ex.status === 200 && ex.json && typeof ex.json === "object", `GET /api/object_info answered ${ex.status}`);
    const defs = ex.json as Record<string, { input?: { required?: unknown } }>;
    for (const [name, def] of Object.entries(defs)) {
      t.expect(!!def?.input?.required && typeof def.input.required === "object", `${name} has no input.required`, ex);
    }
    if (!t.options.static) for (const core of ["EmptyImage", "SaveImage"]) t.expect(Object.hasOwn(defs, core), `${core} is not listed`, ex);
  }),

  check("HOST-2 POST /api/upload/image returns {name, subfolder}", H, async (t: T) => {
    const ex = await uploadImage(t, pngBytes(4, 4, [nonce(255), 9, 9, 255]), { overwrite: "true" });
    const r = ex.json as { name?: unknown; subfolder?: unknown };
    t.expect(ex.status === 200 && typeof r?.name === "string" && typeof r?.subfolder === "string", `the upload answered ${ex.status}`, ex);
  }),

  check("HOST-3 POST /api/upload/mask returns {name, subfolder}; subfolder is ignored (flat, content-addressed)", H, async (t: T) => {
    const original = await uploadImage(t, pngBytes(4, 4, [nonce(255), 20, 20, 255]));
    const o = original.json as { name?: string; subfolder?: string };
    t.need(original.status === 200 && o?.name, `uploading the original answered ${original.status} (HOST-2)`);
    const mask = pngBytes(4, 4, [0, 0, 0, 128]);
    const ref = JSON.stringify({ filename: o.name, subfolder: o.subfolder ?? "", type: "input" });
    const up = (subfolder: string) =>
      uploadHosted(t, "mask", [
        { name: "image", value: mask, filename: "mask.png", contentType: "image/png" },
        { name: "type", value: "input" },
        { name: "subfolder", value: subfolder },
        { name: "original_ref", value: ref },
      ]);
    const [a, b] = [await up("conformance-a"), await up("conformance-b")];
    const [ra, rb] = [a.json as { name?: unknown; subfolder?: unknown }, b.json as { name?: unknown; subfolder?: unknown }];
    t.expect(a.status === 200 && typeof ra?.name === "string" && typeof ra?.subfolder === "string", `the mask upload answered ${a.status}`, a);
    t.expect(
      ra?.name === rb?.name && ra?.subfolder === rb?.subfolder,
      `the same mask under two subfolders got ${JSON.stringify(ra)} and ${JSON.stringify(rb)}`,
      b,
    );
  }),

  check("HOST-4 POST /api/prompt {prompt} returns {prompt_id} and the prompt runs", H, async (t: T) => {
    const id = await queuePromptOk(t, simpleGraph());
    const seen = await waitHostedTerminal(t, id);
    t.expect(seen[seen.length - 1] === "success", `the prompt ended ${seen[seen.length - 1]}`);
  }),

  check("HOST-5 GET /api/job/{id}/status ends in a terminal value that stays: success, error, cancelled", { ...H, timeoutMs: 300_000 }, async (t: T) => {
    const cases: Array<[string, unknown, string[]]> = [
      ["a simple prompt", simpleGraph(), ["success"]],
      ["a failing prompt", failingGraph(t), ["error", "non_retryable_error"]],
    ];
    for (const [what, graph, expected] of cases) {
      const id = await queuePromptOk(t, graph);
      const seen = await waitHostedTerminal(t, id);
      const last = seen[seen.length - 1]!;
      t.expect(expected.includes(last), `${what} ended ${last}, expected ${expected.join(" or ")}`);
      const again = await hostedStatus(t, id);
      t.expect(again.status === last, `${what}: terminal ${last} then ${again.status}`, again.ex);
    }
    const id = await queuePromptOk(t, endedEarlyGraph(t));
    await t.http.request("POST", t.http.url("/api/queue"), { json: { delete: [id] } });
    const seen = await waitHostedTerminal(t, id);
    t.expect(seen[seen.length - 1] === "cancelled", `a deleted prompt ended ${seen[seen.length - 1]}`);
    t.expect(
      seen.slice(0, -1).every((s) => !HOSTED_TERMINAL.has(s)),
      `statuses seen: ${seen.join(" -> ")}`,
    );
  }),

  check(
    "HOST-5 a prompt that fails on its input (an upload that is no image, to LoadImage) ends non_retryable_error exactly when its v2 error code is non-retryable",
    { ...H, timeoutMs: 300_000 },
    async (t: T) => {
      // The hosted status tells a client whether running the same graph again can help; a file that
      // cannot be decoded never will, so a surface that says so in its error code must say it here too.
      const up = await uploadImage(t, new TextEncoder().encode(`conformance ${nonce()}: these bytes are not an image`));
      const name = (up.json as { name?: unknown } | undefined)?.name;
      t.need(up.status === 200 && typeof name === "string", `uploading a file to load answered ${up.status} (HOST-2)`);
      const graph = uploadGraph(name);
      t.requireClasses(graph, "upload");
      const { ex, id } = await queuePrompt(t, graph);
      // Refusing the file before the run (ComfyUI's validation checks only that it exists) is a choice HOST-9 judges.
      t.need(id, `POST /api/prompt answered ${ex.status}: LoadImage of a file that is no image was refused before it ran`);
      const seen = await waitHostedTerminal(t, id);
      const told = seen[seen.length - 1]!;
      t.need(
        told === "error" || told === "non_retryable_error",
        `LoadImage of a file that is no image ended ${told}, not failed (HOST-5's other check judges the status)`,
      );
      const v2 = await t.http.request("GET", t.http.url(`/api/v2/jobs/${encodeURIComponent(id)}`));
      const job = v2.json as { status?: unknown; error?: { code?: unknown } | null } | undefined;
      const code = job?.error?.code;
      t.need(
        v2.status === 200 && job?.status === "failed" && typeof code === "string",
        `GET /api/v2/jobs/${id} answered ${v2.status} without a failed job's error code`,
      );
      const expected = (NON_RETRYABLE_JOB_ERROR_CODES as readonly string[]).includes(code) ? "non_retryable_error" : "error";
      t.expect(told === expected, `the prompt failed with error code ${code}, so its hosted status is ${expected}; GET /api/job/${id}/status said ${told}`, v2);
      const again = await hostedStatus(t, id);
      t.expect(again.status === told, `terminal ${told} then ${again.status}`, again.ex);
    },
  ),

  check("HOST-6 GET /api/view answers 302 to a signed URL that serves the bytes without the API key", H, async (t: T) => {
    const bytes = pngBytes(5, 5, [nonce(255), 30, 30, 255]);
    const up = await uploadImage(t, bytes);
    const r = up.json as { name?: string; subfolder?: string };
    t.need(up.status === 200 && r?.name, `the upload answered ${up.status} (HOST-2)`);
    const { redirect, file } = await view(t, { filename: r.name, subfolder: r.subfolder ?? "", type: "input" });
    t.expect(redirect.status === 302 && redirect.headers.has("location"), `GET /api/view answered ${redirect.status}`, redirect);
    if (!file) return;
    t.expect(file.status === 200, `the signed URL without the key answered ${file.status}`, file);
    t.expect(
      Buffer.compare(Buffer.from(file.bytes), Buffer.from(bytes)) === 0,
      `the signed URL served ${file.bytes.byteLength} bytes that differ from the upload`,
      file,
    );
  }),

  check(
    "HOST-7 GET /api/queue lists running and pending; POST /api/queue {delete} cancels pending and running prompts",
    { ...H, timeoutMs: 300_000 },
    async (t: T) => {
      const q = await t.http.request("GET", t.http.url("/api/queue"));
      const body = q.json as { queue_running?: unknown; queue_pending?: unknown };
      t.expect(q.status === 200 && Array.isArray(body?.queue_running) && Array.isArray(body?.queue_pending), `GET /api/queue answered ${q.status}`, q);
      const running = await queuePromptOk(t, endedEarlyGraph(t));
      const pending = await queuePromptOk(t, endedEarlyGraph(t));
      await whenStarted(t, running);
      const del = await t.http.request("POST", t.http.url("/api/queue"), { json: { delete: [pending, running] } });
      t.expect(del.status === 200, `POST /api/queue answered ${del.status}`, del);
      for (const id of [running, pending]) {
        const seen = await waitHostedTerminal(t, id);
        t.expect(seen[seen.length - 1] === "cancelled", `a deleted prompt ended ${seen[seen.length - 1]}`);
      }
    },
  ),

  check("HOST-8 POST /api/interrupt interrupts the caller's running prompt", H, async (t: T) => {
    const id = await queuePromptOk(t, endedEarlyGraph(t));
    await whenStarted(t, id);
    const ex = await t.http.request("POST", t.http.url("/api/interrupt"), { json: {} });
    t.expect(ex.status === 200, `POST /api/interrupt answered ${ex.status}`, ex);
    const seen = await waitHostedTerminal(t, id);
    t.expect(seen[seen.length - 1] === "cancelled", `the interrupted prompt ended ${seen[seen.length - 1]}`);
  }),

  check("HOST-9 an invalid request is 400 and a missing API key 401", H, async (t: T) => {
    const empty = await queuePrompt(t, undefined);
    t.expect(empty.ex.status === 400, `a prompt request without prompt answered ${empty.ex.status}`, empty.ex);
    const invalid = await queuePrompt(t, missingInputGraph());
    t.expect(invalid.ex.status === 400, `an invalid graph answered ${invalid.ex.status}`, invalid.ex);
    if (t.options.token && !t.options.demo) {
      const ex = await t.http.request("POST", t.http.url("/api/prompt"), { json: { prompt: simpleGraph() }, auth: "none" });
      t.expect(ex.status === 401, `a prompt without X-API-Key answered ${ex.status}`, ex);
    }
  }),

  ...operationsWithInput("hosted").map((route) =>
    check(`HOST-9 ${route.operationId} answers malformed input with a 4xx`, { ...H, timeoutMs: 300_000 }, async (t: T) => {
      // The job API is an extension (HJOB): a surface that does not serve it has no answer to judge.
      if (isJobApiPath(route.path)) await skipUnlessJobApi(t);
      await sendNegatives(t, route);
    }),
  ),

  check("HOST-10 multipart uploads are accepted with the boundary the client sets", H, async (t: T) => {
    const browser = await uploadImage(
      t,
      pngBytes(3, 3, [nonce(255), 40, 40, 255]),
      {},
      `----WebKitFormBoundary${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`,
    );
    t.expect(browser.status === 200, `a browser-style boundary: the upload answered ${browser.status}`, browser);
    // FormData: fetch writes the Content-Type and its boundary itself, as the seed's clients do.
    const form = new FormData();
    form.set("image", new Blob([pngBytes(3, 3, [nonce(255), 41, 41, 255])], { type: "image/png" }), "conformance.png");
    form.set("type", "input");
    const native = await t.http.request("POST", t.http.url("/api/upload/image"), { body: form });
    t.expect(native.status === 200, `a fetch-set boundary: the upload answered ${native.status}`, native);
  }),
];
