// The double's hosted interface under /api: ComfyUI-style uploads, prompts, status, view, queue,
// interrupt and history, over the same jobs and assets as v2.
import { blake3 } from "hash-wasm";
import { NON_RETRYABLE_JOB_ERROR_CODES } from "../../../generated/enums.ts";
import { objectInfo, executionOrder } from "./engine.ts";
import type { JobRec, State } from "./state.ts";
import { checkGraph } from "./v2.ts";
import { assetUrl, hostedFail, send, type Req } from "./views.ts";

/** The job error codes whose hosted status is non_retryable_error (the spec's `x-non-retryable`). */
const NON_RETRYABLE: readonly string[] = NON_RETRYABLE_JOB_ERROR_CODES;

const STATUS: Record<string, string> = {
  queued: "queued_waiting",
  running: "executing",
  canceling: "cancel_requested",
  succeeded: "success",
  failed: "error",
  canceled: "cancelled",
  expired: "lost",
};

function json(req: Req): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: req.body.length ? JSON.parse(req.body.toString("utf8")) : undefined };
  } catch {
    hostedFail(req.res, 400, "invalid_request", "The body is not JSON.");
    return { ok: false };
  }
}

async function form(req: Req): Promise<FormData | undefined> {
  try {
    return await new Response(new Uint8Array(req.body), { headers: { "content-type": String(req.headers["content-type"] ?? "") } }).formData();
  } catch {
    hostedFail(req.res, 400, "invalid_request", "The body is not multipart/form-data.");
    return undefined;
  }
}

/** Stores an input under a content-addressed name (the same bytes keep the same name). */
async function storeInput(s: State, account: string, bytes: Uint8Array, filename: string): Promise<string> {
  const name = `${(await blake3(bytes)).slice(0, 16)}_${filename.replace(/[^A-Za-z0-9._-]/g, "_")}`;
  if (![...s.assets.values()].some((a) => a.name === name && a.account === account)) {
    await s.addAsset({ account, bytes, contentType: "image/png", name, jobId: null, folder: "input" });
  }
  return name;
}

const entry = (j: JobRec) => [
  j.number,
  j.id,
  j.workflow,
  {},
  executionOrder(j.workflow as never).filter(
    (id) =>
      (j.workflow[id] as { class_type: string }).class_type.startsWith("Save") || (j.workflow[id] as { class_type: string }).class_type.startsWith("Preview"),
  ),
];

/** Handles a request under /api (not /api/v2). */
export async function handleHosted(s: State, req: Req, account: string): Promise<void> {
  const { method, path, res } = req;
  const mine = (id: string) => {
    const j = s.jobs.get(id);
    return j && j.account === account ? j : undefined;
  };
  let m: RegExpExecArray | null;
  if (path === "/api/object_info" && method === "GET") return send(res, 200, objectInfo(s.o.missingNodes));
  if ((m = /^\/api\/object_info\/([^/]+)$/.exec(path)) && method === "GET") {
    const all = objectInfo(s.o.missingNodes);
    const name = decodeURIComponent(m[1]!);
    if (s.broken("nodeInfoOtherClass")) return send(res, 200, all);
    return Object.hasOwn(all, name) ? send(res, 200, { [name]: all[name] }) : send(res, 200, {});
  }
  if (path === "/api/system_stats" && method === "GET")
    return send(res, 200, { system: { os: "linux", comfyui_version: "double", python_version: "none", embedded_python: false, argv: [] }, devices: [] });
  if (path === "/api/prompt" && method === "GET") {
    const n = [...s.jobs.values()].filter((j) => j.account === account && ["queued", "running", "canceling"].includes(j.status)).length;
    return send(res, 200, { exec_info: { queue_remaining: n + (s.broken("promptInfoOffByOne") ? 1 : 0) } });
  }
  if ((path === "/api/upload/image" || path === "/api/upload/mask") && method === "POST") {
    const f = await form(req);
    if (!f) return;
    const image = f.get("image");
    if (!(image instanceof Blob)) return hostedFail(res, 400, "invalid_request", "Missing field: image");
    const bytes = new Uint8Array(await image.arrayBuffer());
    if (path === "/api/upload/image")
      return send(res, 200, { name: await storeInput(s, account, bytes, (image as File).name || "image.png"), subfolder: "", type: "input" });
    let ref: { filename?: string };
    try {
      ref = JSON.parse(String(f.get("original_ref")));
    } catch {
      return hostedFail(res, 400, "invalid_request", "Missing or invalid field: original_ref");
    }
    const original = [...s.assets.values()].find((a) => a.name === ref.filename && a.account === account);
    if (!original) return hostedFail(res, 404, "not_found", "The original image does not exist.");
    const masked = Buffer.concat([Buffer.from(original.bytes), Buffer.from(bytes)]);
    return send(res, 200, { name: await storeInput(s, account, masked, `mask_${ref.filename}`), subfolder: "", type: "input" });
  }
  if (path === "/api/prompt" && method === "POST") {
    const p = json(req);
    if (!p.ok) return;
    const prompt = (p.value as { prompt?: unknown } | undefined)?.prompt;
    if (!prompt || typeof prompt !== "object" || Array.isArray(prompt)) return hostedFail(res, 400, "invalid_prompt", "Missing or invalid prompt.");
    const invalid = checkGraph(s, account, prompt as Record<string, unknown>);
    if (invalid)
      return hostedFail(res, 400, "prompt_outputs_failed_validation", "Prompt outputs failed validation", {
        node_errors: (invalid.details as { node_errors?: unknown })?.node_errors ?? {},
      });
    const job = s.createJob(account, prompt as Record<string, unknown>);
    return send(res, 200, { prompt_id: job.id, number: job.number, node_errors: {} });
  }
  if ((m = /^\/api\/job\/([^/]+)\/status$/.exec(path)) && method === "GET") {
    const j = mine(decodeURIComponent(m[1]!));
    return j
      ? send(res, 200, {
          status:
            s.broken("hostedFailedAsSuccess") && j.status === "failed"
              ? "success"
              : s.broken("historyDeleteEndsJob") && s.outOfHistory.has(j.id)
                ? "lost"
                : s.broken("nonRetryableForEveryFailure") && j.status === "failed"
                  ? "non_retryable_error"
                  : j.status === "failed" && !s.broken("errorForEveryFailure") && NON_RETRYABLE.includes(j.error?.code ?? "")
                    ? "non_retryable_error"
                    : STATUS[j.status],
        })
      : hostedFail(res, 404, "not_found", "Not found.", {}, s);
  }
  if (path === "/api/view" && method === "GET") {
    const filename = req.query.get("filename");
    const type = req.query.get("type");
    if (!filename || (type !== null && !["output", "temp", "input"].includes(type)))
      return hostedFail(res, 400, "invalid_request", "Missing or invalid filename or type.");
    if (filename.includes("/") || filename.includes("..") || (req.query.get("subfolder") ?? "") !== "") return hostedFail(res, 403, "forbidden", "Forbidden.");
    const a = [...s.assets.values()].find((x) => x.name === filename && x.account === account);
    if (!a) return hostedFail(res, 404, "not_found", "Not found.", {}, s);
    const key = s.broken("keyInLocation") && typeof req.headers["x-api-key"] === "string" ? `&key=${req.headers["x-api-key"]}` : "";
    res.writeHead(302, { location: assetUrl(s, a, req.origin).url + key });
    return void res.end();
  }
  if (path === "/api/queue" && method === "GET") {
    const jobs = [...s.jobs.values()].filter((j) => j.account === account);
    return send(res, 200, {
      queue_running: jobs.filter((j) => j.status === "running" || j.status === "canceling").map(entry),
      queue_pending: jobs.filter((j) => j.status === "queued").map(entry),
    });
  }
  if (path === "/api/queue" && method === "POST") {
    const p = json(req);
    if (!p.ok) return;
    const body = p.value as { delete?: unknown; clear?: unknown } | undefined;
    if (!body || typeof body !== "object" || Array.isArray(body) || (body.delete !== undefined && !Array.isArray(body.delete)))
      return hostedFail(res, 400, "invalid_request", "Invalid queue request.");
    for (const id of (body.delete as unknown[] | undefined) ?? []) {
      const j = mine(String(id));
      if (j) s.cancel(j);
    }
    if (body.clear === true) for (const j of [...s.jobs.values()]) if (j.account === account && j.status === "queued") s.cancel(j);
    res.writeHead(200);
    return void res.end();
  }
  if (path === "/api/interrupt" && method === "POST") {
    const p = json(req);
    if (!p.ok) return;
    const id = (p.value as { prompt_id?: unknown } | undefined)?.prompt_id;
    for (const j of [...s.jobs.values()])
      if (j.account === account && j.status === "running" && (typeof id !== "string" || j.id === id || s.broken("interruptIgnoresPromptId"))) s.cancel(j);
    res.writeHead(200);
    return void res.end();
  }
  if (path === "/api/history" && method === "POST") {
    const p = json(req);
    if (!p.ok) return;
    const body = p.value as { delete?: unknown; clear?: unknown } | undefined;
    if (!body || typeof body !== "object" || Array.isArray(body) || (body.delete !== undefined && !Array.isArray(body.delete)))
      return hostedFail(res, 400, "invalid_request", "Invalid history request.");
    const finished = (id: string) => mine(id)?.completedAt;
    const ids = body.clear === true ? [...s.jobs.keys()].filter(finished) : ((body.delete as unknown[] | undefined) ?? []).map(String).filter(finished);
    for (const id of ids) {
      if (!s.broken("historyDeleteIgnored")) s.outOfHistory.add(id);
    }
    res.writeHead(200);
    return void res.end();
  }
  if (path === "/api/history" && method === "GET") {
    const max = req.query.get("max_items");
    if (max !== null && (!/^\d+$/.test(max) || Number(max) < 1)) return hostedFail(res, 400, "invalid_request", "Invalid max_items.");
    const done = [...s.jobs.values()]
      .filter((j) => j.account === account && j.completedAt && !s.outOfHistory.has(j.id))
      .reverse()
      .slice(0, max ? Number(max) : undefined);
    return send(res, 200, Object.fromEntries(done.map((j) => [j.id, history(j)])));
  }
  if ((m = /^\/api\/history\/([^/]+)$/.exec(path)) && method === "GET") {
    const j = mine(decodeURIComponent(m[1]!));
    return send(res, 200, j?.completedAt && !s.outOfHistory.has(j.id) ? { [j.id]: history(j) } : {});
  }
  // The double serves no job API: it answers those routes as ComfyUI 0.3.64's aiohttp does a
  // route it does not have, so the suite's HJOB checks see a surface that does not serve them.
  if (path === "/api/jobs" || path.startsWith("/api/jobs/") || path === "/api/features") {
    res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
    return void res.end("404: Not Found");
  }
  hostedFail(res, 404, "not_found", "Not found.", {}, s);
}

function history(j: JobRec) {
  return {
    prompt: entry(j),
    outputs: j.hostedOutputs,
    status: { status_str: j.status === "succeeded" ? "success" : "error", completed: j.status === "succeeded", messages: [] },
    meta: {},
  };
}
