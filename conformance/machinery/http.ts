// The suite's HTTP layer. Every request goes through here, with a timeout, and every answer is
// checked against the contract whatever the check that sent it is about: the body against the
// generated validator of its operation and status, errors against the envelope and the
// code-to-status table, 429s for an integer Retry-After, jobs for the status-dependent rules.
import { attribute, bodyKindOf, CODE_STATUS, isV2Path, matchRoute, ownerRule, validator, type BodyKind } from "./contract.ts";
import { jobInvariants, type JobSource } from "./invariants.ts";
import type { Recorder } from "./recorder.ts";
import { ByteChecks } from "./bytes.ts";
import { Coverage } from "./coverage.ts";
import { Timeline, quote, type Finding, type View } from "./timeline.ts";
import type { RouteSpec } from "../../generated/routes.ts";
import { HOSTED_ERROR_TYPE_STATUS } from "../../generated/enums.ts";
import type { Surface } from "../types.ts";

/** One request and its answer, as the suite saw it. */
export interface Exchange {
  method: string;
  url: string;
  operationId?: string;
  requestBody?: string;
  status: number;
  headers: Headers;
  bytes: Uint8Array<ArrayBuffer>;
  text: string;
  /** The parsed body when it is JSON, else undefined. */
  json: unknown;
  /** When the request was sent and its answer arrived (the timeline's clock). */
  sent?: number;
  at?: number;
  /** How it authenticated (the timeline re-reads a job the same way). */
  auth?: Auth;
  /** Why the suite sent it, when the timeline's reports should say (the end-of-run re-read). */
  note?: string;
}

/** How a request authenticates: the surface's usual way, not at all, or explicitly. */
export type Auth = "auto" | "none" | { bearer: string } | { apiKey: string };

export interface RequestOptions {
  headers?: Record<string, string>;
  /** A JSON value to send as the body. */
  json?: unknown;
  /** A raw body (malformed JSON, multipart...). */
  body?: string | Uint8Array | FormData;
  auth?: Auth;
  timeoutMs?: number;
  redirect?: "follow" | "manual";
  /** Skip the automatic checks (for requests whose answers are not the contract's, e.g. a storage host). */
  raw?: boolean;
  /** This request is the suite's own retry of a keyed submission that answered 5xx (IDEM-5). */
  idemRetry?: boolean;
  /** Why the suite sends it, named beside its views in the timeline's reports. */
  note?: string;
}

/** What the run keeps of every answer, for the checks that look back over the whole run. */
export interface Seen {
  method: string;
  url: string;
  status: number;
  v2: boolean;
  retryAfter: string | null;
  code?: string;
  message?: string;
}

/** The server did not answer in time: the hang the contract never allows. */
export class RequestTimeout extends Error {
  readonly method: string;
  readonly url: string;
  readonly ms: number;
  constructor(method: string, url: string, ms: number) {
    super(`no answer to ${method} ${url} within ${ms} ms`);
    this.method = method;
    this.url = url;
    this.ms = ms;
  }
}

/** `POST http://host/path {"a":1}`, shortened. */
export function describeRequest(ex: { method: string; url: string; requestBody?: string }): string {
  return `${ex.method} ${ex.url}${ex.requestBody ? ` ${clip(ex.requestBody.replace(/\r?\n/g, "\\n"), 300)}` : ""}`;
}

/** The status line and the start of the body. */
export function excerpt(ex: Exchange, max = 600): string {
  const ct = ex.headers.get("content-type") ?? "";
  const ra = ex.headers.get("retry-after");
  // A redirect's target is its answer (reports redact the run's keys from it).
  const loc = ex.status >= 300 && ex.status < 400 ? ex.headers.get("location") : null;
  return `${ex.status}${ct ? ` (${ct})` : ""}${ra !== null ? ` Retry-After: ${ra}` : ""}${loc !== null ? ` Location: ${loc}` : ""} ${clip(ex.text, max)}`.trim();
}

/** A string cut to max characters with an ellipsis. */
export function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// Signs that an error message leaks internals: stack frames, file paths, SQL, exception names.
const LEAK =
  /(\bat \S+ \(|\n\s+at |\/(home|usr|var|opt|srv|app|tmp)\/|node_modules|[A-Za-z]:\\|\.(ts|js|py):\d+|\bSELECT\b|\bINSERT\b|SQLITE|ECONNREFUSED|Traceback)/;

/** Whether a message looks like it carries a stack, a path, SQL or upstream text. */
export function leaksInternals(message: string): boolean {
  return LEAK.test(message);
}

export interface HttpOptions {
  baseUrl: string;
  token?: string;
  timeoutMs: number;
  surface: Surface;
  demo: boolean;
  recorder: Recorder;
  /** Every credential of the run (token, other tokens): no answer's headers may carry one. */
  keys?: string[];
  /** Keep per-job timelines (off for the static subset: a mock's examples are not one job). */
  timeline?: boolean;
}

/** The instrumented HTTP client of one run. */
export class Http {
  readonly base: URL;
  /** The mount prefix of the base URL, without a trailing slash ("" when none). */
  readonly basePath: string;
  /** Strings that must never come back (SUB-11: extra_data values). */
  readonly secrets = new Set<string>();
  /** Every answer of the run, in order. */
  readonly seen: Seen[] = [];
  private readonly exchanges = new WeakMap<Response, Exchange>();
  /** Every view of every job, and the invariants over them. */
  readonly timeline: Timeline;
  /** Downloads checked against what their outputs declared. */
  readonly byteChecks = new ByteChecks();
  /** What of the contract the run reached (operations, statuses, query parameters, messages). */
  readonly coverage: Coverage;

  readonly options: HttpOptions;

  constructor(options: HttpOptions) {
    this.options = options;
    this.base = new URL(options.baseUrl);
    this.basePath = this.base.pathname.replace(/\/+$/, "");
    this.coverage = new Coverage(this.basePath);
    this.timeline = new Timeline(
      this.basePath,
      (f) => this.finding(f),
      (...rules) => this.recorder.evaluated(...rules),
    );
  }

  /** Reports a timeline finding under its rule, with both views quoted. */
  private finding(f: Finding): void {
    const t0 = this.timeline.t0;
    const describe = (v: View) => v.request ?? `${v.source}${v.stream ? ` (${v.stream})` : ""}`;
    this.recorder.violate(
      {
        rule: f.rule,
        message: f.message,
        request: describe(f.later),
        excerpt: [f.earlier && `earlier: ${quote(f.earlier, t0)}`, `later: ${quote(f.later, t0)}`].filter(Boolean).join("\n"),
      },
      f.key,
    );
  }

  /** Whether views are recorded into the timeline. */
  get recording(): boolean {
    return this.options.timeline !== false;
  }

  get recorder(): Recorder {
    return this.options.recorder;
  }

  /** The base URL joined with a contract path such as `/api/v2/jobs`. */
  url(path: string): string {
    return `${this.base.origin}${this.basePath}${path}`;
  }

  /** Sends one request and checks its answer. */
  async request(method: string, url: string, opts: RequestOptions = {}): Promise<Exchange> {
    const u = new URL(url);
    const route = matchRoute(method, u.pathname, this.basePath);
    const headers: Record<string, string> = { ...this.authHeaders(opts.auth ?? "auto", route, u.pathname) };
    let body: BodyInit | undefined;
    let requestBody: string | undefined;
    if (opts.json !== undefined) {
      requestBody = JSON.stringify(opts.json);
      body = requestBody;
      headers["content-type"] = "application/json";
    } else if (opts.body !== undefined) {
      body = opts.body as BodyInit;
      requestBody = typeof opts.body === "string" ? opts.body : opts.body instanceof FormData ? "(multipart form)" : `(${opts.body.byteLength} bytes)`;
    }
    Object.assign(headers, opts.headers);
    for (const [k, v] of Object.entries(headers)) if (v === "") delete headers[k];
    const ms = opts.timeoutMs ?? this.options.timeoutMs;
    let res: Response;
    let bytes: Uint8Array<ArrayBuffer>;
    const sent = this.timeline.now();
    try {
      res = await fetch(u, { method, headers, body, redirect: opts.redirect ?? "manual", signal: AbortSignal.timeout(ms) });
      bytes = new Uint8Array(await res.arrayBuffer());
    } catch (err) {
      if (err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError")) throw new RequestTimeout(method, url, ms);
      throw new Error(`${method} ${url} failed: ${(err as Error).message}${(err as Error).cause ? ` (${String((err as { cause: unknown }).cause)})` : ""}`);
    }
    this.coverage.exchange(method, url, res.status);
    const text = new TextDecoder().decode(bytes);
    const ex: Exchange = {
      method,
      url,
      operationId: route?.operationId,
      requestBody,
      status: res.status,
      headers: res.headers,
      bytes,
      text,
      json: parseJson(text),
      sent,
      at: this.timeline.now(),
      auth: opts.auth ?? "auto",
      note: opts.note,
    };
    this.scanHeaders(ex, route);
    if (!opts.raw) this.checkExchange(ex, route, u.pathname);
    await this.checkBytes(ex, headers.range ?? headers.Range, opts);
    if (!opts.raw && !opts.idemRetry && route?.operationId === "createJob" && ex.status >= 500) await this.retryUnknownOutcome(ex, url, headers, opts);
    return ex;
  }

  /** IDEM-5: a keyed submission that answered 5xx has an unknown outcome; its key stays claimed. */
  private async retryUnknownOutcome(ex: Exchange, url: string, headers: Record<string, string>, opts: RequestOptions): Promise<void> {
    const key = Object.entries(headers).find(([k]) => k.toLowerCase() === "idempotency-key")?.[1];
    if (!key) return;
    const again = await this.request(ex.method, url, { ...opts, idemRetry: true });
    const code = (again.json as { error?: { code?: unknown } } | undefined)?.error?.code;
    if (again.status === 422 && code === "idempotency_key_reuse") this.recorder.evaluated("IDEM-5");
    else {
      this.recorder.violate(
        {
          rule: "IDEM-5",
          message:
            `a keyed submission answered ${ex.status} (an unknown outcome); the retry with the same key answered ${again.status} ${typeof code === "string" ? code : ""}, not 422 idempotency_key_reuse`.trim(),
          request: describeRequest(again),
          excerpt: `first: ${excerpt(ex, 300)}\nretry: ${excerpt(again, 300)}`,
        },
        "IDEM-5 retry",
      );
    }
  }

  /** Every header of every answer: no credential of the run and no extra_data value. */
  private scanHeaders(ex: Exchange, route: RouteSpec | undefined): void {
    const keys = (this.options.keys ?? []).filter((k) => k.length >= 4);
    if (keys.length === 0 && this.secrets.size === 0) return;
    const where = `${route?.operationId ?? new URL(ex.url).pathname} ${ex.status}`;
    ex.headers.forEach((value, name) => {
      for (const s of this.secrets)
        if (value.includes(s)) this.violate("SUB-11", `${where}: the ${name} header carries an extra_data value`, ex, `SUB-11 header ${name}`);
      for (const k of keys) {
        if (!value.includes(k)) continue;
        const rule =
          name === "location" && route?.operationId === "hostedView"
            ? "HOST-6"
            : route?.family === "hosted" || (!route && !isV2Path(new URL(ex.url).pathname))
              ? "AUTH-5"
              : "AUTH-1";
        this.violate(rule, `${where}: the ${name} header carries an API key of the run`, ex, `${rule} header ${name}`);
      }
    });
    this.recorder.evaluated("SUB-11");
  }

  /** Downloads of known outputs against their declarations (OUT-4, OUT-5), ranges against the full body (AST-4). */
  private async checkBytes(ex: Exchange, range: string | undefined, opts: RequestOptions): Promise<void> {
    if (!this.recording || ex.method !== "GET") return;
    const loc = ex.headers.get("location");
    if (ex.status >= 300 && ex.status < 400 && loc) return this.byteChecks.redirected(ex.url, new URL(loc, ex.url).toString());
    if (![200, 206, 416].includes(ex.status)) return;
    const refetch = async () => {
      const full = await this.request("GET", ex.url, { auth: opts.auth, raw: true }).catch(() => undefined);
      return full?.status === 200 ? full.bytes : undefined;
    };
    const found = await this.byteChecks.check(ex.url, range, ex.status, ex.headers, ex.bytes, refetch);
    for (const f of found) this.violate(f.rule, f.message, ex, f.key);
    if (this.byteChecks.idOf(ex.url)) this.recorder.evaluated(...(ex.status === 200 ? ["OUT-4", "OUT-5"] : ["AST-4"]));
  }

  /** A fetch for openapi-fetch (the generated client): the same checks, and the exchange kept for reports. */
  fetchFor(auth: Auth = "auto", timeoutMs?: number): (req: Request) => Promise<Response> {
    return async (req: Request) => {
      const text = req.body ? await req.text() : undefined;
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => {
        headers[k] = v;
      });
      const ex = await this.request(req.method, req.url, { headers, body: text, auth, timeoutMs });
      const nullBody = ex.status === 204 || ex.status === 304 || req.method === "HEAD";
      const res = new Response(nullBody ? null : ex.bytes, { status: ex.status, headers: ex.headers });
      this.exchanges.set(res, ex);
      return res;
    };
  }

  /** The exchange behind a Response that fetchFor returned. */
  exchangeOf(res: Response): Exchange | undefined {
    return this.exchanges.get(res);
  }

  /** Headers that authenticate a request the way the surface expects. */
  authHeaders(auth: Auth, route: RouteSpec | undefined, pathname: string): Record<string, string> {
    if (auth === "none") return {};
    if (typeof auth === "object") return "bearer" in auth ? { authorization: `Bearer ${auth.bearer}` } : { "x-api-key": auth.apiKey };
    const token = this.options.token;
    if (!token) return {};
    const hosted = route ? route.family === "hosted" : !isV2Path(pathname);
    return hosted ? { "x-api-key": token } : { authorization: `Bearer ${token}` };
  }

  /** The automatic checks of one answer. */
  checkExchange(ex: Exchange, route: RouteSpec | undefined, pathname: string): void {
    const v2 = route ? route.family === "v2" : isV2Path(pathname);
    const err = (ex.json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    this.seen.push({
      method: ex.method,
      url: ex.url,
      status: ex.status,
      v2,
      retryAfter: ex.headers.get("retry-after"),
      code: typeof err?.code === "string" ? err.code : undefined,
      message: typeof err?.message === "string" ? err.message : undefined,
    });
    const where = `${route?.operationId ?? pathname} ${ex.status}`;
    this.scanSecrets(ex.text, ex);
    if (ex.headers.has("idempotency-replayed")) this.violate("IDEM-7", `${where}: carries an Idempotency-Replayed header`, ex);
    else if (route?.operationId === "createJob") this.recorder.evaluated("IDEM-7");
    if (ex.status === 402 && this.options.surface === "self-hosted") this.violate("SUB-10", `${where}: 402 on the self-hosted surface`, ex);
    if (ex.status === 429) this.checkRetryAfter(ex, v2 ? "ERR-3" : "HOST-9", where);
    if (ex.status >= 400 && v2) this.checkEnvelope(ex, where);
    if (ex.status >= 400 && route?.family === "hosted") this.checkHostedError(ex, route, where);
    if (!route) return;
    const declared = route.responses[String(ex.status)];
    if (!declared) {
      if (ex.status < 400) this.violate(ownerRule(route.operationId), `${where}: status ${ex.status} is not declared for ${route.operationId}`, ex);
      return;
    }
    if (ex.status >= 400 && v2) return; // the envelope checks above cover v2 errors
    if (declared.contentType === "application/json" && ex.method !== "HEAD") {
      if (ex.json === undefined) {
        this.violate(ex.status >= 400 ? "HOST-9" : ownerRule(route.operationId), `${where}: the body is not JSON`, ex);
        return;
      }
      const fn = declared.validator ? validator(declared.validator) : undefined;
      if (fn) this.validateBody(fn, bodyKindOf(route, ex.status), ex.json, where, ex);
      this.checkJobs(route, ex);
      if (this.recording && ex.status < 300) this.record(route, ex);
    }
  }

  /** Validates a body with a generated validator and records what it breaks, by rule. */
  validateBody(fn: (data: unknown) => boolean, kind: BodyKind, body: unknown, where: string, ex?: Exchange): boolean {
    const ok = fn(body);
    const errors = (fn as unknown as { errors?: import("ajv").ErrorObject[] | null }).errors ?? [];
    const violations = ok ? [] : attribute(kind, errors, body);
    for (const v of violations) this.violate(v.rule, `${where}: ${v.message}`, ex);
    this.recorder.evaluated(...ruleSetOf(kind));
    return ok;
  }

  /** Adds the job views of an answer to the timeline. */
  private record(route: RouteSpec, ex: Exchange): void {
    const op = route.operationId;
    const body = ex.json as Record<string, unknown> | undefined;
    const base = { sent: ex.sent ?? ex.at ?? 0, at: ex.at, request: describeRequest(ex), auth: ex.auth };
    const job = (j: unknown, source: string) => {
      if (!j || typeof j !== "object" || typeof (j as { id?: unknown }).id !== "string") return;
      if (ex.note) source = `${source} (${ex.note})`;
      const o = j as Record<string, unknown>;
      for (const out of Array.isArray(o.outputs) ? o.outputs : []) if (out && typeof out === "object") this.byteChecks.declare(out as Record<string, unknown>);
      this.timeline.add({ ...base, job: o.id as string, source, kind: "job", status: typeof o.status === "string" ? o.status : undefined, body: o });
    };
    const pathId = () => decodeURIComponent(/\/([^/]+)\/status$/.exec(new URL(ex.url).pathname)?.[1] ?? "");
    switch (op) {
      case "createJob":
        return job(body, "POST /api/v2/jobs");
      case "getJob":
        return job(body, "GET /api/v2/jobs/{id}");
      case "cancelJob":
        return job(body, "POST /api/v2/jobs/{id}/cancel");
      case "listJobs":
        for (const j of Array.isArray(body?.jobs) ? body.jobs : []) job(j, "GET /api/v2/jobs (list)");
        return;
      case "getAsset":
        if (body) this.timeline.addAsset(body, "GET /api/v2/assets/{id}");
        return;
      case "hostedQueuePrompt":
        // A prompt_id the client chose may name a prompt queued before (HJOB-8): its answer is that prompt, in any state.
        if (typeof body?.prompt_id === "string" && !clientPromptId(ex.requestBody))
          this.timeline.add({ ...base, job: body.prompt_id, source: "POST /api/prompt", kind: "outcome", family: "hosted" });
        return;
      case "hostedGetJobStatus": {
        const status = body?.status;
        if (typeof status === "string")
          this.timeline.add({
            ...base,
            job: pathId(),
            source: `GET /api/job/{id}/status (${status})${ex.note ? ` (${ex.note})` : ""}`,
            kind: "outcome",
            family: "hosted",
            outcome: HOSTED_OUTCOMES[status],
            hostedStatus: status,
          });
        return;
      }
      case "hostedGetHistory":
      case "hostedGetHistoryEntry":
        for (const [id, entry] of Object.entries(body ?? {})) {
          const st = (entry as { status?: { status_str?: unknown; completed?: unknown } } | null)?.status;
          if (!st) continue;
          const ok = st.completed === true || st.status_str === "success";
          this.timeline.add({
            ...base,
            job: id,
            source: `GET /api/history (${String(st.status_str)})`,
            kind: "outcome",
            family: "hosted",
            outcome: ok ? ["succeeded"] : ["failed", "canceled", "expired"],
          });
        }
        return;
    }
  }

  /** Applies the job invariants to each job in a v2 answer. */
  private checkJobs(route: RouteSpec, ex: Exchange): void {
    const op = route.operationId;
    if (ex.status >= 300) return;
    const body = ex.json as Record<string, unknown> | undefined;
    const jobs =
      op === "listJobs" ? (Array.isArray(body?.jobs) ? (body.jobs as unknown[]) : []) : ["createJob", "getJob", "cancelJob"].includes(op) ? [body] : [];
    for (const j of jobs) this.checkJob(j, op as JobSource, `${op} ${ex.status}`, ex);
  }

  /** The status-dependent rules on one job. */
  checkJob(job: unknown, source: JobSource, where: string, ex?: Exchange): void {
    for (const v of jobInvariants(job, source, this.options.surface, this.options.demo)) this.violate(v.rule, `${where}: ${v.message}`, ex);
    this.recorder.evaluated("JOB-6", "JOB-7", "JERR-2");
  }

  private checkEnvelope(ex: Exchange, where: string): void {
    if (ex.method === "HEAD") return; // HEAD answers carry no body
    const fn = validator("schema_ErrorEnvelope")!;
    if (ex.json === undefined) {
      this.violate("ERR-1", `${where}: the error body is not JSON`, ex);
      return;
    }
    if (!this.validateBody(fn, { kind: "envelope" }, ex.json, where, ex)) return;
    const code = (ex.json as { error: { code: string; message: string } }).error.code;
    const message = (ex.json as { error: { message: string } }).error.message;
    const expected = CODE_STATUS.get(code);
    if (expected !== undefined && expected !== ex.status) this.violate("ERR-2", `${where}: code ${code} belongs with ${expected}, not ${ex.status}`, ex);
    this.recorder.evaluated("ERR-2");
    if (ex.status >= 500) {
      if (ex.status !== 500 || code !== "upstream_error")
        this.violate("ERR-5", `${where}: a server failure must be 500 upstream_error, got ${ex.status} ${code}`, ex);
      if (leaksInternals(message)) this.violate("ERR-4", `${where}: the message leaks internals: ${clip(message, 120)}`, ex);
      this.recorder.evaluated("ERR-4", "ERR-5");
    }
  }

  /**
   * A hosted error's `type` against the spec's `x-hosted-error-types`: each listed type comes with
   * its one status; a type the spec does not list is ComfyUI's own, only on a 400 of POST
   * /api/prompt (its validation errors). The message is a sentence, generic on a 500.
   * ComfyUI's `{error: "..."}` string shape (the job API) is left to the body's schema.
   */
  private checkHostedError(ex: Exchange, route: RouteSpec, where: string): void {
    if (ex.method === "HEAD") return;
    const err = (ex.json as { error?: unknown } | undefined)?.error;
    if (!err || typeof err !== "object") return;
    const { type, message } = err as { type?: unknown; message?: unknown };
    if (typeof type !== "string" || typeof message !== "string") return; // the schema's finding
    const expected = (HOSTED_ERROR_TYPE_STATUS as Record<string, number>)[type];
    if (expected !== undefined && expected !== ex.status) this.violate("HOST-9", `${where}: error type ${type} belongs with ${expected}, not ${ex.status}`, ex);
    else if (expected === undefined && !(route.operationId === "hostedQueuePrompt" && ex.status === 400))
      this.violate("HOST-9", `${where}: error type ${JSON.stringify(type)} is none of the spec's hosted error types`, ex);
    if (message.trim() === "") this.violate("HOST-9", `${where}: error type ${type} with an empty message`, ex);
    else if (ex.status >= 500 && leaksInternals(message)) this.violate("HOST-9", `${where}: the message leaks internals: ${clip(message, 120)}`, ex);
    this.recorder.evaluated("HOST-9");
  }

  private checkRetryAfter(ex: Exchange, rule: string, where: string): void {
    const ra = ex.headers.get("retry-after");
    if (ra === null) this.violate(rule, `${where}: a 429 without Retry-After`, ex);
    else if (!/^\d+$/.test(ra.trim())) this.violate(rule, `${where}: Retry-After ${JSON.stringify(ra)} is not an integer number of seconds`, ex);
    else this.recorder.evaluated(rule);
  }

  /** SUB-11: a registered extra_data value must never come back, in any answer, event or message. */
  scanSecrets(text: string, ex?: Exchange, where = ex ? `${ex.operationId ?? ex.url} ${ex.status}` : "stream"): void {
    if (this.secrets.size === 0) return;
    for (const s of this.secrets) if (text.includes(s)) this.violate("SUB-11", `${where}: an extra_data value came back`, ex);
    this.recorder.evaluated("SUB-11");
  }

  /** Records a violation found automatically. */
  violate(rule: string, message: string, ex?: Exchange, key?: string): void {
    this.recorder.violate({ rule, message, request: ex ? describeRequest(ex) : undefined, excerpt: ex ? excerpt(ex) : undefined }, key ?? message);
  }
}

/** v2 statuses each terminal hosted status tells (HOST-5); a value not here is in flight. */
const HOSTED_OUTCOMES: Record<string, readonly string[]> = {
  success: ["succeeded"],
  error: ["failed"],
  non_retryable_error: ["failed"],
  cancelled: ["canceled"],
  lost: ["expired", "failed"],
};

/** Rules evaluated when a body of this kind is validated (for the per-rule tallies). */
function ruleSetOf(kind: BodyKind): string[] {
  switch (kind.kind) {
    case "job":
      return ["JOB-1", "JOB-2", "ST-1", "PRG-1", "OUT-1", "OUT-2", "URL-1", "JERR-1", "JOB-5"];
    case "jobList":
      return ["JOB-1", "AST-4"];
    case "asset":
      return [kind.rule, "AST-3"];
    case "envelope":
      return ["ERR-1"];
    case "rule":
      return [kind.rule];
    case "sse":
      return kind.event === "status" ? ["SSE-2", "JOB-1"] : kind.event === "progress" ? ["PRG-1"] : ["SSE-2"];
    case "ws":
      return ["WS-2", "WS-3"];
  }
}

/** Whether a POST /api/prompt request body carries the client's own prompt_id. */
function clientPromptId(requestBody: string | undefined): boolean {
  try {
    return typeof (JSON.parse(requestBody ?? "null") as { prompt_id?: unknown } | null)?.prompt_id === "string";
  } catch {
    return false;
  }
}
