// The client of the hosted (ComfyUI-compatible, experimental) interface: upload, queue a prompt,
// poll its status, follow the WebSocket, and download through /api/view without ever sending the
// key to the redirect target. The key goes in `X-API-Key` on REST and in `token` on the socket.
import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { TERMINAL_HOSTED_JOB_STATUSES } from "../../generated/enums.ts";
import { fetchWithoutCredentials, safeFileName } from "./download.ts";
import { HostedApiError, hostedErrorFromResponse } from "./errors.ts";
import { HostedSocket, type HostedSocketOptions } from "./hosted-socket.ts";
import { blobOf, nameOf, type UploadSource } from "./local-files.ts";
import { isNetworkError, realSleep, type Sleep } from "./retry.ts";
import type { HostedFileInfo, HostedHistory, HostedNodeDefinitions, HostedPromptResult, HostedQueue, HostedUploadResult, Workflow } from "./types.ts";

/** The terminal values of `GET /api/job/{id}/status`; every other value means in flight. */
export const HOSTED_TERMINAL_STATUSES = TERMINAL_HOSTED_JOB_STATUSES;
export type HostedTerminalStatus = (typeof HOSTED_TERMINAL_STATUSES)[number];

/** True for a terminal hosted status. In-flight names are never matched: they may change. */
export function isHostedTerminal(status: string): status is HostedTerminalStatus {
  return (HOSTED_TERMINAL_STATUSES as readonly string[]).includes(status);
}

export interface HostedClientOptions {
  /** Origin (and optional prefix) of the hosted interface (default http://127.0.0.1:8189). */
  baseUrl?: string;
  /** API key, sent as `X-API-Key` (REST) and `token` (WebSocket). */
  apiKey?: string | undefined;
  fetch?: (request: Request) => Promise<Response>;
  sleep?: Sleep;
}

/** A client of the hosted interface. */
export class HostedClient {
  readonly baseUrl: string;
  readonly clientId = randomUUID();
  private readonly apiKey: string | undefined;
  private readonly fetchImpl: (request: Request) => Promise<Response>;
  private readonly sleep: Sleep;

  constructor(options: HostedClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? "http://127.0.0.1:8189").replace(/\/+$/, "");
    this.apiKey = options.apiKey || undefined;
    this.fetchImpl = options.fetch ?? ((request) => fetch(request));
    this.sleep = options.sleep ?? realSleep;
  }

  /** Node definitions keyed by class name. */
  objectInfo(): Promise<HostedNodeDefinitions> {
    return this.json("GET", "/api/object_info");
  }

  /** Uploads an input image (multipart; the boundary is set by the form). */
  uploadImage(source: UploadSource, options: { filename?: string; type?: "input" | "temp"; overwrite?: boolean } = {}): Promise<HostedUploadResult> {
    return this.upload("/api/upload/image", source, options.filename, { type: options.type ?? "input", overwrite: String(options.overwrite ?? true) });
  }

  /** Uploads a mask for an image uploaded before (`original` is its file info). */
  uploadMask(source: UploadSource, original: HostedFileInfo, options: { filename?: string } = {}): Promise<HostedUploadResult> {
    return this.upload("/api/upload/mask", source, options.filename, { type: "input", original_ref: JSON.stringify(original) });
  }

  /** Queues an API-format graph; `prompt_id` is the job id. A body carrying `error` throws. */
  async queuePrompt(prompt: Workflow, options: { extraData?: { api_key_vendor_org?: string } } = {}): Promise<HostedPromptResult> {
    const result = await this.json<HostedPromptResult>("POST", "/api/prompt", {
      prompt,
      client_id: this.clientId,
      ...(options.extraData ? { extra_data: options.extraData } : {}),
    });
    if (result.error !== undefined && result.error !== null) {
      throw new HostedApiError(200, null, typeof result.error === "string" ? result.error : JSON.stringify(result.error), result);
    }
    return result;
  }

  /** The prompt's status string (`GET /api/job/{id}/status`). */
  async status(promptId: string): Promise<string> {
    return (await this.json<{ status: string }>("GET", `/api/job/${encodeURIComponent(promptId)}/status`)).status;
  }

  /** Polls the status until a terminal value and returns it; network failures are retried. */
  async waitForTerminal(
    promptId: string,
    options: { signal?: AbortSignal; pollIntervalMs?: number; onStatus?: (status: string) => void } = {},
  ): Promise<HostedTerminalStatus> {
    let last = "";
    for (;;) {
      options.signal?.throwIfAborted();
      try {
        const status = await this.status(promptId);
        if (status !== last) options.onStatus?.((last = status));
        if (isHostedTerminal(status)) return status;
      } catch (err) {
        if (!isNetworkError(err)) throw err;
      }
      await this.sleep(options.pollIntervalMs ?? 250, options.signal);
    }
  }

  /** The caller's running and pending prompts. */
  queue(): Promise<HostedQueue> {
    return this.json("GET", "/api/queue");
  }

  /** Cancels prompts, pending or running (`POST /api/queue {delete}`). */
  async cancel(promptIds: string[]): Promise<void> {
    await this.json("POST", "/api/queue", { delete: promptIds });
  }

  /** Interrupts the running prompt (that one, when named). */
  async interrupt(promptId?: string): Promise<void> {
    await this.json("POST", "/api/interrupt", promptId ? { prompt_id: promptId } : {});
  }

  /** History of a finished prompt (an empty object before it finishes). */
  history(promptId: string): Promise<HostedHistory> {
    return this.json("GET", `/api/history/${encodeURIComponent(promptId)}`);
  }

  /** Opens the WebSocket and sends the `feature_flags` handshake. */
  connect(options: HostedSocketOptions = {}): Promise<HostedSocket> {
    const url = new URL(`${this.baseUrl}/ws`);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("clientId", options.clientId ?? this.clientId);
    if (this.apiKey) url.searchParams.set("token", this.apiKey);
    return HostedSocket.open(url.toString(), options);
  }

  /**
   * Fetches a file by its file info: `/api/view` with the key answers 302 to a signed URL, which
   * is fetched without the key (it must never reach the storage host).
   */
  async view(file: HostedFileInfo, options: { signal?: AbortSignal } = {}): Promise<Response> {
    const query = new URLSearchParams({ filename: file.filename, subfolder: file.subfolder ?? "", type: file.type ?? "output" });
    const viewUrl = `${this.baseUrl}/api/view?${query}`;
    const res = await this.fetchImpl(new Request(viewUrl, { headers: this.headers(), redirect: "manual", signal: options.signal }));
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      const target = await fetchWithoutCredentials(this.fetchImpl, new URL(location, res.url || viewUrl).toString(), options.signal);
      if (!target.ok) throw await hostedErrorFromResponse(target);
      return target;
    }
    if (!res.ok) throw await hostedErrorFromResponse(res);
    return res; // served in place (not this server, but ComfyUI does)
  }

  /** Downloads a file by its file info into `dir` under its own name; returns the path. */
  async download(file: HostedFileInfo, dir: string, options: { signal?: AbortSignal } = {}): Promise<string> {
    const res = await this.view(file, options);
    const path = join(dir, safeFileName(file.filename, "download"));
    await mkdir(dir, { recursive: true });
    await pipeline(Readable.fromWeb(res.body as import("node:stream/web").ReadableStream<Uint8Array>), createWriteStream(path));
    return path;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(this.apiKey ? { "x-api-key": this.apiKey } : {}), ...extra };
  }

  private async json<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
    const res = await this.fetchImpl(
      new Request(this.baseUrl + path, {
        method,
        headers: this.headers(body === undefined ? {} : { "content-type": "application/json" }),
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    if (!res.ok) throw await hostedErrorFromResponse(res);
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  private async upload(path: string, source: UploadSource, filename: string | undefined, fields: Record<string, string>): Promise<HostedUploadResult> {
    const form = new FormData();
    form.append("image", await blobOf(source), filename ?? nameOf(source) ?? "upload.png");
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    // No Content-Type header: the form sets it with its boundary.
    const res = await this.fetchImpl(new Request(this.baseUrl + path, { method: "POST", headers: this.headers(), body: form }));
    if (!res.ok) throw await hostedErrorFromResponse(res);
    return (await res.json()) as HostedUploadResult;
  }
}
