// The double's v2 interface: jobs, their event stream, and assets.
import { blake3 } from "hash-wasm";
import * as validators from "../../../generated/validators.js";
import { isAssetRef, validateGraph } from "./engine.ts";
import type { JobRec, State } from "./state.ts";
import { assetView, fail, jobView, logsView, outputView, progressView, send, showsLog, type Req } from "./views.ts";

const TERMINAL = new Set(["succeeded", "canceled", "failed", "expired"]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function parseJson(req: Req, s: State): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(req.body.toString("utf8")) };
  } catch {
    fail(req.res, 400, s.broken("wrongErrorCode") ? "invalid_workflow" : "invalid_request", "The request body is not JSON.", {
      fields: [{ field: "", reason: "malformed_json" }],
    });
    return { ok: false };
  }
}

function fieldsOf(errors: Array<{ instancePath: string; params: Record<string, unknown> }> | null | undefined) {
  return (errors ?? []).map((e) => ({
    field: (e.instancePath.slice(1) || String(e.params.additionalProperty ?? e.params.missingProperty ?? "")).replace(/\//g, "."),
    reason: "invalid",
  }));
}

/** Asset references of a graph that do not resolve to the caller's assets. */
function badAssets(s: State, account: string, graph: Record<string, unknown>) {
  const bad: Array<{ node_id: string; field: string; asset_id: unknown }> = [];
  for (const [id, n] of Object.entries(graph)) {
    for (const [field, v] of Object.entries((n as { inputs: Record<string, unknown> }).inputs)) {
      if (!isAssetRef(v)) continue;
      const a = s.assets.get(String(v.info?.id));
      if (!a || a.account !== account) bad.push({ node_id: id, field, asset_id: v.info?.id });
    }
  }
  return bad;
}

/** Graph checks shared with the hosted prompt: UI format, node errors, asset references. */
export function checkGraph(s: State, account: string, workflow: Record<string, unknown>): { code: string; details?: unknown } | undefined {
  if (Array.isArray(workflow.nodes) && Array.isArray(workflow.links)) return { code: "workflow_format_ui" };
  const nodeErrors = validateGraph(workflow, s.o.missingNodes);
  if (Object.keys(nodeErrors).length) return { code: "invalid_workflow", details: { node_errors: nodeErrors } };
  const assets = badAssets(s, account, workflow);
  if (assets.length) return { code: "missing_asset", details: { assets } };
  return undefined;
}

const LABEL_KEY = /^[A-Za-z0-9_.-]{1,40}$/;

/** The label key a failure of the submission's validation is about (null: the map as a whole), or undefined when a failure lies outside `metadata`. */
function metadataFailure(
  errors: Array<{ instancePath: string; keyword: string; params: Record<string, unknown>; propertyName?: string }>,
): { key: string | null } | undefined {
  if (!errors.length || !errors.every((e) => e.instancePath === "/metadata" || e.instancePath.startsWith("/metadata/"))) return undefined;
  const e = errors.find((x) => x.keyword !== "propertyNames") ?? errors[0]!;
  const named = e.propertyName ?? e.params.propertyName;
  if (typeof named === "string") return { key: named };
  const parts = e.instancePath.split("/");
  return { key: parts.length >= 3 ? parts[2]!.replace(/~1/g, "/").replace(/~0/g, "~") : null };
}

/** The metadata[key]=value filters of a listing, or the reason they are malformed. */
function labelFilters(s: State, query: URLSearchParams): { filters: Array<[string, string]> } | { bad: string; key: string | null } {
  const filters: Array<[string, string]> = [];
  for (const [name, value] of query) {
    const m = /^metadata\[(.*)\]$/s.exec(name);
    if (!m) {
      if (name.startsWith("metadata")) return { bad: "invalid_format", key: null };
      continue;
    }
    const key = m[1]!;
    if (!LABEL_KEY.test(key)) return { bad: "invalid_format", key };
    if (filters.some(([k]) => k === key)) return { bad: "repeated", key };
    if (value.length > 256) return { bad: "too_long", key };
    filters.push([key, value]);
  }
  if (filters.length > 3 && !s.broken("filterMalformedAccepted")) return { bad: "too_many", key: null };
  return { filters };
}

/** The caller's jobs for GET /api/v2/jobs: status and label filters, newest first, pages by cursor (a job number). */
function listJobs(s: State, req: Req, account: string): void {
  const res = req.res;
  const limit = req.query.get("limit") ?? "20";
  const status = req.query.get("status");
  const cursor = req.query.get("cursor");
  if (
    !/^\d+$/.test(limit) ||
    Number(limit) < 1 ||
    Number(limit) > 100 ||
    (status !== null && !["queued", "running", "succeeded", "canceling", "canceled", "failed", "expired"].includes(status))
  ) {
    return fail(res, 400, "invalid_request", "The query is invalid.", { fields: [{ field: "limit", reason: "invalid" }] });
  }
  if (cursor !== null && !/^\d{1,15}$/.test(cursor)) {
    if (s.broken("cursorAsInvalidRequest"))
      return fail(res, 400, "invalid_request", "The query is invalid.", { fields: [{ field: "cursor", reason: "invalid_cursor" }] });
    return fail(res, 400, "invalid_cursor", "The cursor is invalid.");
  }
  const parsed = labelFilters(s, req.query);
  if ("bad" in parsed)
    return fail(res, 400, "invalid_metadata_filter", "The metadata filter is invalid.", {
      key: parsed.key,
      fields: [{ field: parsed.key === null ? "metadata" : `metadata.${parsed.key}`, reason: parsed.bad }],
    });
  const filters = parsed.filters;
  if (filters.length && !s.o.labels && !s.broken("declinedFilterIgnored"))
    return fail(res, 422, "metadata_not_supported", "This surface does not accept metadata.");
  const labeled = filters.length > 0 && s.o.labels && !s.broken("filterIgnored");
  const carries = (j: JobRec) => (s.broken("filterAnyOf") ? filters.some(([k, v]) => j.metadata[k] === v) : filters.every(([k, v]) => j.metadata[k] === v));
  const byStatus = status !== null && !(filters.length > 0 && s.broken("filterDropsStatus"));
  const all = [...s.jobs.values()]
    .filter((j) => j.account === account && (!byStatus || j.status === status) && (!labeled || carries(j)))
    .reverse()
    .filter((j, i) => !(labeled && i === 3 && s.broken("listSkipsFourth")) && (cursor === null || j.number < Number(cursor)));
  const page = all.slice(0, Number(limit));
  const next = all.length > page.length ? String(page[page.length - 1]!.number) : null;
  send(res, 200, { jobs: page.map((j) => jobView(s, j, req.origin, "list")), next_cursor: next });
}

async function createJob(s: State, req: Req, account: string, noCredits: boolean): Promise<void> {
  const parsed = parseJson(req, s);
  if (!parsed.ok) return;
  const body = parsed.value as Record<string, unknown>;
  if (
    s.broken("serverErrorOnWrongType") &&
    body &&
    typeof body === "object" &&
    "workflow" in body &&
    (typeof body.workflow !== "object" || body.workflow === null)
  ) {
    return fail(req.res, 500, "upstream_error", "Something went wrong on our side. Please try again.");
  }
  if (!validators.request_createJob(body)) {
    const labels = metadataFailure((validators.request_createJob.errors ?? []) as never);
    if (labels && !s.broken("metadataInvalidAs400")) {
      const details = {
        ...(s.broken("metadataInvalidNoKey") ? {} : { key: labels.key }),
        fields: [{ field: labels.key === null ? "metadata" : `metadata.${labels.key}`, reason: "invalid" }],
      };
      return fail(req.res, 422, "metadata_invalid", "The metadata is invalid.", details);
    }
    return fail(req.res, 400, "invalid_request", "The request is invalid.", { fields: fieldsOf(validators.request_createJob.errors as never) });
  }
  const metadata = (body.metadata ?? {}) as Record<string, string>;
  if (s.broken("labelBoundTooTight") && Object.keys(metadata).length > 15)
    return fail(req.res, 422, "metadata_invalid", "The metadata is invalid.", { key: null, fields: [{ field: "metadata", reason: "too_many" }] });
  if (!s.o.labels && Object.keys(metadata).length > 0) return fail(req.res, 422, "metadata_not_supported", "This surface does not accept metadata.");
  if (noCredits) return fail(req.res, 402, "insufficient_credits", "Your account has no credits left.");
  const workflow = body.workflow as Record<string, unknown>;
  const keyHeader = req.headers["idempotency-key"];
  const key = typeof keyHeader === "string" ? `${account}:${keyHeader}` : undefined;
  if (key) {
    // A key's first use: its workflow and its labels (every reuse is refused; the breakages compare them).
    const claimed = s.keys.get(key);
    const [workflowText, labelsText] = [JSON.stringify(workflow), JSON.stringify(metadata)];
    const sameWorkflow = claimed !== undefined && JSON.parse(claimed)[0] === workflowText;
    const sameLabels = claimed !== undefined && JSON.parse(claimed)[1] === labelsText;
    const acceptedAnyway =
      (s.broken("idemAcceptsDifferentBody") && !sameWorkflow) ||
      s.broken("idemNewJobOnReuse") ||
      (s.broken("idemIgnoresLabels") && sameWorkflow && !sameLabels);
    if (claimed !== undefined && !acceptedAnyway) return fail(req.res, 422, "idempotency_key_reuse", "This Idempotency-Key has already been used.");
    if (s.broken("idemRace")) await new Promise((r) => setTimeout(r, 20));
    s.keys.set(key, JSON.stringify([workflowText, labelsText]));
    if (s.o.upstreamErrorOnKeyed && !s.failedKeyed) {
      s.failedKeyed = true;
      if (s.broken("idemReleasedOn5xx")) s.keys.delete(key);
      return fail(req.res, 500, "upstream_error", "Something went wrong on our side. Please try again.");
    }
  }
  const release = () => key && s.keys.delete(key);
  const invalid = checkGraph(s, account, workflow);
  if (invalid) {
    release();
    const messages: Record<string, string> = {
      workflow_format_ui: "This is a UI-format workflow; export it in the API format.",
      invalid_workflow: "The workflow is invalid.",
      missing_asset: "A referenced asset does not exist or is not yours.",
    };
    return fail(req.res, 422, invalid.code, messages[invalid.code]!, invalid.details);
  }
  if (s.queue.length >= s.o.queueBound) {
    release();
    return fail(req.res, 429, "queue_full", "The queue is full; retry later.", undefined, { "retry-after": s.broken("retryAfterNotInteger") ? "1.5" : "1" });
  }
  const job = s.createJob(account, workflow, body.extra_data, metadata);
  const partner = (body.extra_data as { api_key_vendor_org?: unknown } | undefined)?.api_key_vendor_org;
  const echoed: Record<string, string> = s.broken("extraDataInHeader") && typeof partner === "string" ? { "x-partner-key": partner } : {};
  send(req.res, 201, jobView(s, job, req.origin, "post"), { location: createdLocation(s, "jobs", job.id), ...echoed });
}

function stream(s: State, req: Req, job: JobRec): void {
  const res = req.res;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  let n = 0;
  const write = (event: string, data: unknown) =>
    res.write(`${s.broken("sseIdLines") ? `id: ${++n}\n` : ""}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  const onStatus = () => {
    if (s.broken("sseSkipsRunning") && job.status === "running") return;
    if (s.broken("sseSkipsCanceling") && job.status === "canceling") return;
    write("status", jobView(s, job, req.origin, TERMINAL.has(job.status) ? "terminal-event" : "event"));
    if (s.broken("sseAfterTerminal") && TERMINAL.has(job.status)) write("progress", progressView(s, job));
    if (TERMINAL.has(job.status)) done();
  };
  const onProgress = () => {
    const p = progressView(s, job);
    write("progress", s.broken("stepPastSteps") && p && p.step === p.steps && p.steps !== null ? { ...p, step: (p.steps as number) + 1 } : p);
    if (s.broken("sseProgressRegresses") && job.prevProgress?.step != null && p?.step != null) write("progress", { ...job.prevProgress });
  };
  const onPreview = (node: string, jpeg: Uint8Array) =>
    write("preview", { node_id: node, content_type: "image/jpeg", data_base64: Buffer.from(jpeg).toString("base64") });
  const onOutput = (a: Parameters<typeof outputView>[1]) => write("output", outputView(s, a, req.origin));
  const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), s.o.keepAliveMs);
  job.streams++;
  let closed = false;
  const done = () => {
    if (!closed) job.streams--;
    closed = true;
    clearInterval(keepAlive);
    job.events.off("status", onStatus).off("progress", onProgress).off("preview", onPreview).off("output", onOutput);
    res.end();
  };
  req.raw.on("close", done);
  write("status", jobView(s, job, req.origin, TERMINAL.has(job.status) ? "terminal-event" : "event"));
  if (TERMINAL.has(job.status)) return done();
  if (job.progress) onProgress();
  job.events.on("status", onStatus).on("progress", onProgress).on("preview", onPreview).on("output", onOutput);
}

async function upload(s: State, req: Req, account: string): Promise<void> {
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(req.body), { headers: { "content-type": String(req.headers["content-type"] ?? "") } }).formData();
  } catch {
    return fail(req.res, 400, "invalid_request", "The body is not multipart/form-data.", { fields: [{ field: "", reason: "not_multipart" }] });
  }
  const file = form.get("file");
  if (!(file instanceof Blob)) return fail(req.res, 400, "invalid_request", "The file is missing.", { fields: [{ field: "file", reason: "required" }] });
  const bytes = new Uint8Array(await file.arrayBuffer());
  const hash = `blake3:${await blake3(bytes)}`;
  const expected = form.get("expected_hash");
  if (typeof expected === "string" && expected !== hash)
    return fail(req.res, 409, "hash_mismatch", "The uploaded bytes do not match the expected hash.", { expected_hash: expected, actual_hash: hash });
  // Bytes are new to the caller unless the caller has them (another account's copy never counts).
  const known = [...s.assets.values()].some((a) => a.hash === hash && (a.account === account || s.broken("createdNewAcrossCallers")));
  const name = String(form.get("file_path") ?? (file as File).name ?? "upload");
  const a = await s.addAsset({
    account,
    bytes,
    contentType: String(form.get("content_type") ?? (file.type || "application/octet-stream")),
    name,
    jobId: null,
    folder: "input",
  });
  const body = { ...assetView(s, a, req.origin), created_new: !known || s.broken("createdNewAlwaysTrue") };
  if (known) send(req.res, 200, body);
  else send(req.res, 201, body, { location: createdLocation(s, "assets", a.id) });
}

async function content(s: State, req: Req, id: string, account: string | undefined): Promise<void> {
  const a = s.assets.get(id);
  const expires = Number(req.query.get("expires"));
  const sig = req.query.get("signature");
  const signed = a && sig !== null && expires * 1000 > Date.now() && sig === s.sign(id, expires);
  if (sig !== null && !signed) return fail(req.res, 403, "forbidden", "The link is invalid or has expired.");
  if (!a || (!signed && a.account !== account)) return fail(req.res, 404, "not_found", "Not found.");
  const size = a.bytes.byteLength;
  const range = req.headers.range;
  const headers = {
    "content-type": s.broken("contentTypeNotBytes") && a.contentType === "image/png" ? "image/webp" : a.contentType,
    etag: `"${s.broken("etagPerAsset") ? a.id : a.hash}"`,
    "accept-ranges": "bytes",
  };
  const m = typeof range === "string" ? /^bytes=(\d*)-(\d*)$/.exec(range) : null;
  if (m && (m[1] || m[2])) {
    const start = m[1] ? Number(m[1]) : Math.max(0, size - Number(m[2]));
    const end = m[1] && m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
    if (start >= size || start > end)
      return fail(req.res, 416, "range_not_satisfiable", "The requested range is not satisfiable.", undefined, { "content-range": `bytes */${size}` });
    const shift = s.broken("rangeOffByOne") && end + 1 < size ? 1 : 0;
    req.res.writeHead(206, {
      ...headers,
      "content-range": `bytes ${start}-${end}/${size + (s.broken("contentRangeTotal") ? 1 : 0)}`,
      "content-length": String(end - start + 1),
    });
    return void req.res.end(Buffer.from(a.bytes.subarray(start + shift, end + 1 + shift)));
  }
  req.res.writeHead(200, { ...headers, "content-length": String(size) });
  req.res.end(Buffer.from(a.bytes));
}

/** The `Location` of a 201: the created job or asset under the mount prefix (another one's id when broken). */
function createdLocation(s: State, kind: "jobs" | "assets", id: string): string {
  return `${s.o.prefix}/api/v2/${kind}/${s.broken("locationElsewhere") ? crypto.randomUUID() : id}`;
}

/** Handles a request under /api/v2 (path without the mount prefix). */
export async function handleV2(s: State, req: Req, auth: ReturnType<State["account"]>): Promise<void> {
  const { method, path, res } = req;
  const m = (re: RegExp) => re.exec(path);
  let match: RegExpExecArray | null;
  const authed = "account" in auth ? auth : undefined;
  const needAuth = () => {
    if (authed) return true;
    fail(
      res,
      (auth as { status: number }).status,
      (auth as { status: number }).status === 403 ? "forbidden" : "unauthorized",
      "Missing or invalid credentials.",
    );
    return false;
  };
  const job = (id: string) => {
    if (id.length > 64) return void fail(res, 400, "invalid_request", "The job id is invalid.", { fields: [{ field: "id", reason: "too_long" }] });
    const j = s.jobs.get(id);
    if (!j || j.account !== authed!.account) return void fail(res, 404, "not_found", "Not found.");
    return j;
  };
  if (path === "/api/v2/jobs" && method === "POST") return needAuth() ? createJob(s, req, authed!.account, authed!.noCredits) : undefined;
  if (path === "/api/v2/jobs" && method === "GET") return needAuth() ? listJobs(s, req, authed!.account) : undefined;
  if ((match = m(/^\/api\/v2\/jobs\/([^/]+)$/)) && method === "GET") {
    if (!needAuth()) return;
    const j = job(decodeURIComponent(match[1]!));
    return j ? send(res, 200, jobView(s, j, req.origin, "get")) : undefined;
  }
  if ((match = m(/^\/api\/v2\/jobs\/([^/]+)\/cancel$/)) && method === "POST") {
    if (!needAuth()) return;
    if (req.body.length) {
      const p = parseJson(req, s);
      if (!p.ok) return;
      if (!validators.request_cancelJob(p.value))
        return fail(res, 400, "invalid_request", "The request is invalid.", { fields: fieldsOf(validators.request_cancelJob.errors as never) });
    }
    const j = job(decodeURIComponent(match[1]!));
    if (!j) return;
    s.cancel(j);
    return send(res, 200, jobView(s, j, req.origin, "cancel"));
  }
  if ((match = m(/^\/api\/v2\/jobs\/([^/]+)\/events$/)) && method === "GET") {
    if (!needAuth()) return;
    const j = job(decodeURIComponent(match[1]!));
    return j ? stream(s, req, j) : undefined;
  }
  if ((match = m(/^\/api\/v2\/jobs\/([^/]+)\/workflow$/)) && method === "GET") {
    if (!needAuth()) return;
    const j = job(decodeURIComponent(match[1]!));
    return j ? send(res, 200, { format: "api", workflow: j.workflow, ...(j.leakedExtra ? { extra_data: j.leakedExtra } : {}) }) : undefined;
  }
  if ((match = m(/^\/api\/v2\/jobs\/([^/]+)\/logs$/)) && method === "GET") {
    if (!needAuth()) return;
    const j = job(decodeURIComponent(match[1]!));
    if (!j) return;
    return showsLog(s, j) || s.broken("logsOfRunningJob") ? send(res, 200, logsView(j)) : send(res, 204);
  }
  if (path === "/api/v2/assets" && method === "POST") return needAuth() ? upload(s, req, authed!.account) : undefined;
  if (path === "/api/v2/assets/from-hash" && method === "POST") {
    if (!needAuth()) return;
    const p = parseJson(req, s);
    if (!p.ok) return;
    if (!validators.request_createAssetFromHash(p.value))
      return fail(res, 400, "invalid_request", "The request is invalid.", { fields: fieldsOf(validators.request_createAssetFromHash.errors as never) });
    const { hash, file_path } = p.value as { hash: string; file_path?: string };
    const blob = [...s.assets.values()].find((a) => a.hash === hash && a.account === authed!.account);
    if (!blob) return fail(res, 404, "blob_not_found", "No blob with this hash is available to you.");
    const a = await s.addAsset({
      account: authed!.account,
      bytes: blob.bytes,
      contentType: blob.contentType,
      name: file_path ?? blob.name,
      jobId: null,
      folder: "input",
    });
    return send(res, 201, { ...assetView(s, a, req.origin), created_new: false }, { location: createdLocation(s, "assets", a.id) });
  }
  if ((match = m(/^\/api\/v2\/assets\/by-hash\/([^/]+)$/)) && method === "HEAD") {
    if (!needAuth()) return;
    const hash = decodeURIComponent(match[1]!);
    if (!/^blake3:[0-9a-f]{64}$/.test(hash)) return send(res, 400);
    return send(res, [...s.assets.values()].some((a) => a.hash === hash && a.account === authed!.account) ? 200 : 404);
  }
  if ((match = m(/^\/api\/v2\/assets\/([^/]+)\/content$/)) && method === "GET") {
    // A signed link needs no credentials; without one the caller must authenticate, as on every operation.
    if (!req.query.has("signature") && !s.broken("contentSkipsAuth") && !needAuth()) return;
    return content(s, req, decodeURIComponent(match[1]!), authed?.account);
  }
  if ((match = m(/^\/api\/v2\/assets\/([^/]+)$/)) && (method === "GET" || method === "DELETE")) {
    if (!needAuth()) return;
    const id = decodeURIComponent(match[1]!);
    if (!UUID.test(id)) return fail(res, 404, "not_found", "Not found.");
    const a = s.assets.get(id);
    if (!a || a.account !== authed!.account) return fail(res, 404, "not_found", "Not found.");
    if (method === "GET") return send(res, 200, assetView(s, a, req.origin));
    if (a.jobId) return fail(res, 403, "forbidden", "A job's outputs live as long as their job.");
    if (!s.broken("deleteKeepsAsset")) s.assets.delete(id);
    return send(res, 204);
  }
  fail(res, 404, "not_found", "Not found.");
}
