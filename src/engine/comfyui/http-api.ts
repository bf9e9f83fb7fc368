// A client for ComfyUI's HTTP API (the bare routes, which every ComfyUI version serves). It
// sends no secret but the one in a prompt's extra_data, and its errors never carry bodies we sent.
// Requests go over node:http with keep-alive connections: per request it costs about half the CPU
// of fetch (whose parser runs in WebAssembly), on the path of every prompt (POST /prompt, GET /view).
import http from "node:http";
import https from "node:https";
import { parseJson as parseExactJson } from "../../domain/exact-json.ts";

/** ComfyUI could not be reached (connection refused, reset, DNS, timeout). */
export class ComfyUnreachableError extends Error {
  /** True when nothing reached ComfyUI (the connection was never made), so a retry is safe. */
  readonly notSent: boolean;

  constructor(url: string, cause: unknown) {
    const code = errorCode(cause);
    super(`ComfyUI at ${url} is unreachable${code ? ` (${code})` : ""}`, { cause });
    this.name = "ComfyUnreachableError";
    this.notSent = code !== null && NOT_SENT.has(code);
  }
}

/** ComfyUI answered with an error status. */
export class ComfyHttpError extends Error {
  /** The route called, without its query. */
  readonly route: string;
  readonly status: number;
  /** The parsed JSON body, or null. */
  readonly body: unknown;

  constructor(route: string, status: number, body: unknown) {
    super(`ComfyUI answered ${status} to ${route}`);
    this.name = "ComfyHttpError";
    this.route = route;
    this.status = status;
    this.body = body;
  }
}

const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

function errorCode(err: unknown): string | null {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
    if ((e as Error).name === "TimeoutError") return "timeout";
  }
  return null;
}

/** A file as ComfyUI lists it in `executed` and history. */
export interface FileInfo {
  filename: string;
  subfolder: string;
  type: string;
}

/** Prompt ids in ComfyUI's queue. */
export interface QueueState {
  running: string[];
  pending: string[];
}

/** POST /prompt's answer. */
export interface PromptAccepted {
  prompt_id: string;
  number: number | null;
  node_errors: Record<string, unknown>;
}

/** One entry of GET /history/{prompt_id}. */
export interface HistoryEntry {
  outputs?: Record<string, Record<string, unknown>>;
  status?: { status_str?: string; completed?: boolean; messages?: unknown[] };
}

/** Timeouts of the client, in ms. */
export interface HttpTimeouts {
  /** JSON calls (default 30 s). */
  request: number;
  /** Uploads and downloads (default 10 min). */
  transfer: number;
}

/** What a request got back, its body read whole. */
interface Reply {
  status: number;
  ok: boolean;
  contentType: string | null;
  body: Buffer;
}

/** Idle keep-alive connections close after this long (shorter than servers' own idle timeouts, 75 s for aiohttp). */
const IDLE_CONNECTION_MS = 4_000;
const MAX_REDIRECTS = 5;

/** ComfyUI's HTTP API at one base URL. */
export class ComfyHttp {
  /** The base URL without credentials or a trailing slash. */
  readonly base: string;
  private readonly original: string;
  private readonly origin: string;
  private readonly auth: string | null;
  private readonly timeouts: HttpTimeouts;
  private readonly agents = {
    http: new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
    https: new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  };

  constructor(url: string, timeouts: Partial<HttpTimeouts> = {}) {
    this.original = url;
    const parsed = new URL(url);
    // fetch refuses credentials in a URL; a reverse proxy's basic auth goes in a header instead.
    this.auth = parsed.username
      ? `Basic ${Buffer.from(`${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`).toString("base64")}`
      : null;
    parsed.username = "";
    parsed.password = "";
    this.base = parsed.toString().replace(/\/+$/, "");
    this.origin = parsed.origin;
    this.timeouts = { request: 30_000, transfer: 600_000, ...timeouts };
  }

  /** The WebSocket URL for a client id (credentials kept: ws sends them as basic auth). */
  socketUrl(clientId: string): string {
    const u = new URL(this.original);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    u.pathname = `${u.pathname.replace(/\/+$/, "")}/ws`;
    u.search = `?clientId=${encodeURIComponent(clientId)}`;
    return u.toString();
  }

  /** GET /object_info. */
  async objectInfo(): Promise<Record<string, unknown>> {
    const body = await this.json("GET", "/object_info");
    if (!isObject(body)) throw new ComfyHttpError("/object_info", 200, null);
    return body;
  }

  /** GET /system_stats, its `system` part (argv among it); empty when absent. */
  async systemStats(): Promise<Record<string, unknown>> {
    const body = await this.json("GET", "/system_stats");
    return isObject(body) && isObject(body.system) ? body.system : {};
  }

  /** GET /internal/folder_paths: each folder name's paths on the instance's machine. */
  async folderPaths(): Promise<Record<string, unknown>> {
    const body = await this.json("GET", "/internal/folder_paths");
    return isObject(body) ? body : {};
  }

  /** GET /prompt: how many prompts are queued or running. */
  async queueRemaining(timeoutMs?: number): Promise<number> {
    const body = await this.json("GET", "/prompt", undefined, timeoutMs);
    const n = isObject(body) && isObject(body.exec_info) ? body.exec_info.queue_remaining : undefined;
    return typeof n === "number" && Number.isFinite(n) ? n : 0;
  }

  /**
   * GET /queue, reduced to prompt ids in queue order (an entry is [number, prompt_id, prompt,
   * extra_data, outputs]; ComfyUI lists its pending heap unsorted, the number orders it).
   */
  async queue(): Promise<QueueState> {
    const body = await this.json("GET", "/queue");
    const ids = (list: unknown) =>
      (Array.isArray(list) ? list.filter(Array.isArray) : [])
        .map((e: unknown[]) => ({ n: typeof e[0] === "number" ? e[0] : 0, id: typeof e[1] === "string" ? e[1] : "" }))
        .filter((e) => e.id !== "")
        .sort((a, b) => a.n - b.n)
        .map((e) => e.id);
    return isObject(body) ? { running: ids(body.queue_running), pending: ids(body.queue_pending) } : { running: [], pending: [] };
  }

  /** POST /prompt. A 400 is a ComfyHttpError whose body is ComfyUI's validation error. */
  async postPrompt(body: Record<string, unknown>): Promise<PromptAccepted> {
    const res = await this.json("POST", "/prompt", body);
    if (!isObject(res) || typeof res.prompt_id !== "string") throw new ComfyHttpError("/prompt", 200, null);
    return {
      prompt_id: res.prompt_id,
      number: typeof res.number === "number" ? res.number : null,
      node_errors: isObject(res.node_errors) ? res.node_errors : {},
    };
  }

  /** POST /queue {delete}: removes pending prompts (a running one is not touched by ComfyUI). */
  async deletePending(promptIds: string[]): Promise<void> {
    await this.json("POST", "/queue", { delete: promptIds });
  }

  /** POST /interrupt for one prompt: ComfyUI interrupts it only if it is the one running. */
  async interrupt(promptId: string): Promise<void> {
    await this.json("POST", "/interrupt", { prompt_id: promptId });
  }

  /** GET /history/{prompt_id}: the entry once the prompt finished, else null. */
  async history(promptId: string): Promise<HistoryEntry | null> {
    const body = await this.json("GET", `/history/${encodeURIComponent(promptId)}`);
    const entry = isObject(body) ? body[promptId] : undefined;
    return isObject(entry) ? (entry as HistoryEntry) : null;
  }

  /** POST /upload/image into the input folder, overwriting a file of the same name. */
  async uploadImage(bytes: Uint8Array, filename: string, contentType: string): Promise<FileInfo> {
    const form = new FormData();
    form.append("image", new Blob([new Uint8Array(bytes)], { type: contentType }), filename);
    form.append("type", "input");
    form.append("overwrite", "true");
    let res: Response;
    try {
      res = await fetch(`${this.base}/upload/image`, {
        method: "POST",
        headers: this.auth ? { authorization: this.auth } : {},
        body: form,
        signal: AbortSignal.timeout(this.timeouts.transfer),
      });
    } catch (err) {
      throw new ComfyUnreachableError(this.base, err);
    }
    const body = parseJson(await res.text().catch(() => ""));
    if (!res.ok) throw new ComfyHttpError("/upload/image", res.status, body);
    if (!isObject(body) || typeof body.name !== "string") throw new ComfyHttpError("/upload/image", res.status, null);
    return {
      filename: body.name,
      subfolder: typeof body.subfolder === "string" ? body.subfolder : "",
      type: typeof body.type === "string" ? body.type : "input",
    };
  }

  /** GET /view, following redirects (flowgate's hosted /view answers 302 to a signed link). */
  async view(file: FileInfo): Promise<{ bytes: Buffer; contentType: string | null }> {
    const q = new URLSearchParams({ filename: file.filename, subfolder: file.subfolder, type: file.type });
    const res = await this.send("GET", `/view?${q}`, undefined, this.timeouts.transfer);
    if (!res.ok) throw new ComfyHttpError("/view", res.status, null);
    return { bytes: res.body, contentType: res.contentType };
  }

  /** Closes the idle connections. */
  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  private async json(method: string, route: string, body?: unknown, timeoutMs?: number): Promise<unknown> {
    const res = await this.send(method, route, body === undefined ? undefined : JSON.stringify(body), timeoutMs ?? this.timeouts.request);
    const parsed = parseJson(res.body.toString("utf8"));
    if (!res.ok) throw new ComfyHttpError(route.split("?")[0]!, res.status, parsed);
    return parsed;
  }

  /** One request, redirects followed, the answer read whole within `timeoutMs`; ComfyUnreachableError when it cannot be had. */
  private async send(method: string, route: string, body: string | undefined, timeoutMs: number): Promise<Reply> {
    const deadline = Date.now() + timeoutMs;
    let url = new URL(this.base + route);
    try {
      for (let redirects = 0; ; redirects++) {
        const res = await this.exchange(method, url, body, deadline);
        if (res.location === null || redirects >= MAX_REDIRECTS) return res;
        // As fetch does: a 303, or a 301/302 answering a POST, continues as a GET without the body.
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === "POST")) {
          method = "GET";
          body = undefined;
        }
        url = new URL(res.location, url);
      }
    } catch (err) {
      throw new ComfyUnreachableError(this.base, err);
    }
  }

  /** One HTTP exchange; a redirect comes back with its location. Our credentials never go to another origin. */
  private exchange(method: string, url: URL, body: string | undefined, deadline: number): Promise<Reply & { location: string | null }> {
    const headers: Record<string, string> = {};
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = String(Buffer.byteLength(body));
    }
    if (this.auth && url.origin === this.origin) headers.authorization = this.auth;
    const secure = url.protocol === "https:";
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const fail = (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      };
      const req = (secure ? https : http).request(url, { method, headers, agent: secure ? this.agents.https : this.agents.http }, (res) => {
        const status = res.statusCode ?? 0;
        const location = REDIRECTS.has(status) && typeof res.headers.location === "string" ? res.headers.location : null;
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => void (location === null && chunks.push(chunk)));
        res.on("error", fail);
        res.on("end", () => {
          clearTimeout(timer);
          resolve({ status, ok: status >= 200 && status < 300, contentType: res.headers["content-type"] ?? null, body: Buffer.concat(chunks), location });
        });
      });
      timer = setTimeout(() => req.destroy(Object.assign(new Error("The request timed out"), { name: "TimeoutError" })), Math.max(0, deadline - Date.now()));
      req.on("error", fail);
      req.end(body);
    });
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function parseJson(text: string): unknown {
  if (text === "") return null;
  try {
    return parseExactJson(text);
  } catch {
    return null;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
