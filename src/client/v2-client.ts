// The high-level v2 client: submit, read, list, cancel, wait, stream, upload, download.
// Entry points go through the generated openapi-fetch client; everything after that follows the
// links responses embed (resolved per URL-3 against the origin of the response that carried them).
import { randomUUID } from "node:crypto";
import { createFetchClient, type FetchClient } from "../../generated/fetch-client.ts";
import { parseBlake3Hash, toBlake3Hash } from "../domain/blake3.ts";
import { fetchWithoutCredentials, saveVerified, targetPath, type Downloadable, type DownloadResult } from "./download.ts";
import { BlobNotFoundError, errorFromBody, errorFromResponse, FlowgateApiError, HashMismatchError } from "./errors.ts";
import { streamJob, type JobEvent, type StreamOptions } from "./job-stream.ts";
import { waitForJob, type WaitOptions } from "./job-wait.ts";
import { withResolvedLinks, withResolvedOutput } from "./links.ts";
import { successBody } from "./responses.ts";
import { blobOf, hashSource, nameOf, type UploadSource } from "./local-files.ts";
import { Transport, type RetryOptions, type RetryPolicy } from "./transport.ts";
import type { Sleep } from "./retry.ts";
import type { Asset, Job, JobListItem, JobLogs, JobPage, JobStatus, Workflow } from "./types.ts";

/** The default address of a local `flowgate serve`. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:8189";

export interface FlowgateClientOptions {
  /** Where the v2 interface is served, with any mount prefix (default http://127.0.0.1:8189). */
  baseUrl?: string;
  /** Bearer token (API key); none for open self-hosted servers. */
  token?: string | undefined;
  /** fetch to use (tests inject faults here). */
  fetch?: (request: Request) => Promise<Response>;
  /** Sleep to use for every wait (tests record delays here). */
  sleep?: Sleep;
  retry?: RetryOptions;
}

/** A job id, or a job read earlier (its links are then followed). */
export type JobRef = string | Pick<Job, "id" | "urls">;

export interface SubmitOptions {
  /** Single-use key; a fresh UUID by default. Reuse it only to retry the very same submission. */
  idempotencyKey?: string;
  /** Forwarded to the worker for this run only; `api_key_vendor_org` is the partner-node key. */
  extraData?: { api_key_vendor_org?: string };
  /** Labels stored with the job and returned on every view (at most 16; never secrets). */
  metadata?: Record<string, string>;
  signal?: AbortSignal;
}

export interface ListOptions {
  status?: JobStatus;
  /** Only jobs carrying every one of these labels (at most 3), sent as `metadata[key]=value`. */
  metadata?: Record<string, string>;
  /** Page size, 1 to 100 (server default 20). */
  limit?: number;
  /** `next_cursor` of the previous page. */
  cursor?: string;
  signal?: AbortSignal;
}

export interface UploadOptions {
  /** `blake3:<hex>` the bytes must have; checked locally first, then by the server. */
  expectedHash?: string;
  /** Media type to record (the server sniffs one otherwise). */
  contentType?: string;
  /** File name to record (a path's base name by default). */
  filePath?: string;
  tags?: string[];
  signal?: AbortSignal;
}

/** An uploaded asset, and whether the server already had the bytes (nothing was sent). */
export interface UploadResult {
  asset: Asset;
  reused: boolean;
}

const MAX_REMEMBERED_LINKS = 1000;

/**
 * What a generated-client (openapi-fetch) call resolves to: `data`, typed by the operation's
 * declared 2xx responses, on a 2xx answer with a body; `error` on any other answer.
 */
type CallResult<T> = { data?: T; error?: unknown; response: Response };

/** A client of the v2 job interface. */
export class FlowgateClient {
  readonly baseUrl: string;
  private readonly transport: Transport;
  private readonly api: FetchClient;
  private readonly fetchImpl: (request: Request) => Promise<Response>;
  /** Links of jobs seen, by id, so later calls by id follow them (bounded, oldest dropped first). */
  private readonly links = new Map<string, Job["urls"]>();

  constructor(options: FlowgateClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.fetchImpl = options.fetch ?? ((request) => fetch(request));
    this.transport = new Transport({ token: options.token, fetch: this.fetchImpl, sleep: options.sleep, retry: options.retry });
    this.api = createFetchClient({ baseUrl: this.baseUrl });
  }

  /** Submits a workflow (API format) and returns the queued job. */
  async submit(workflow: Workflow, options: SubmitOptions = {}): Promise<Job> {
    const key = options.idempotencyKey ?? randomUUID();
    const { data, url } = await this.call("rate-limit-only", (fetch) =>
      this.api.POST("/api/v2/jobs", {
        params: { header: { "Idempotency-Key": key } },
        body: { workflow, ...(options.extraData ? { extra_data: options.extraData } : {}), ...(options.metadata ? { metadata: options.metadata } : {}) },
        signal: options.signal,
        fetch,
      }),
    );
    return this.remember(withResolvedLinks(data, url));
  }

  /** Reads a job: the authoritative view (status, progress, outputs so far, `logs` where allowed). */
  async get(ref: JobRef, options: { signal?: AbortSignal } = {}): Promise<Job> {
    const link = this.linkOf(ref, "self");
    if (link) return this.followJobLink("GET", link, options.signal);
    const id = typeof ref === "string" ? ref : ref.id;
    const { data, url } = await this.call("idempotent", (fetch) =>
      this.api.GET("/api/v2/jobs/{id}", { params: { path: { id } }, signal: options.signal, fetch }),
    );
    return this.remember(withResolvedLinks(data, url));
  }

  /** One page of the caller's jobs, newest first. */
  async list(options: ListOptions = {}): Promise<JobPage> {
    const query = { status: options.status, limit: options.limit, cursor: options.cursor, ...(options.metadata ? { metadata: options.metadata } : {}) };
    const { data, url } = await this.call("idempotent", (fetch) => this.api.GET("/api/v2/jobs", { params: { query }, signal: options.signal, fetch }));
    return { jobs: data.jobs.map((j) => this.remember(withResolvedLinks(j, url))), next_cursor: data.next_cursor };
  }

  /** Every job of the caller, page after page. */
  async *listAll(options: Omit<ListOptions, "cursor"> = {}): AsyncGenerator<JobListItem> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...options, cursor });
      yield* page.jobs;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** Requests cancellation; returns the job as it is now (a running job answers `canceling`). */
  async cancel(ref: JobRef, options: { signal?: AbortSignal } = {}): Promise<Job> {
    const link = this.linkOf(ref, "cancel");
    if (link) return this.followJobLink("POST", link, options.signal);
    const id = typeof ref === "string" ? ref : ref.id;
    const { data, url } = await this.call("idempotent", (fetch) =>
      this.api.POST("/api/v2/jobs/{id}/cancel", { params: { path: { id } }, body: {}, signal: options.signal, fetch }),
    );
    return this.remember(withResolvedLinks(data, url));
  }

  /**
   * A job's log, read from its `urls.logs` link (read with GET first when the job is not known
   * yet); null when the job carries no such link (the surface serves no logs) or the server has
   * none to show (204: not finished, nothing captured). Read afresh on every call.
   */
  async getLogs(ref: JobRef, options: { signal?: AbortSignal } = {}): Promise<JobLogs | null> {
    const known = typeof ref === "string" ? this.links.get(ref) : (withResolvedJobUrls(ref) ?? this.links.get(ref.id));
    const link = (known ?? (await this.get(ref, options)).urls).logs;
    if (!link) return null;
    const res = await this.transport.send(() => new Request(link, { signal: options.signal }), "idempotent");
    if (!res.ok) throw await errorFromResponse(res, res.url || link);
    if (res.status === 204) return null;
    return successBody(res, "getJobLogs");
  }

  /** Polls until the job is terminal and returns it; `onProgress` sees every change. */
  wait(ref: JobRef, options: WaitOptions = {}): Promise<Job> {
    return waitForJob({ get: (signal) => this.get(ref, { signal }), sleep: this.transport.sleep }, options);
  }

  /** The job's events (SSE, falling back to polling); ends after the terminal status, read with GET. */
  stream(ref: JobRef, options: StreamOptions = {}): AsyncGenerator<JobEvent> {
    return streamJob(
      {
        get: (signal) => this.get(ref, { signal }),
        openEvents: (url, signal) => this.openEvents(url, signal),
        sleep: this.transport.sleep,
      },
      options,
    );
  }

  /**
   * Uploads a file or bytes as an asset. The blake3 hash is computed locally and the server is
   * asked first (HEAD by-hash, then from-hash), so bytes it already has are never sent again.
   */
  async uploadAsset(source: UploadSource, options: UploadOptions = {}): Promise<UploadResult> {
    const hash = toBlake3Hash(await hashSource(source));
    if (options.expectedHash !== undefined && parseBlake3Hash(options.expectedHash) !== hash.slice(7)) {
      throw new HashMismatchError({
        status: 409,
        code: "hash_mismatch",
        message: "The local bytes do not match the expected hash (nothing was sent).",
        details: { expected_hash: options.expectedHash, actual_hash: hash },
      });
    }
    const filePath = options.filePath ?? nameOf(source);
    const known = await this.status(
      "idempotent",
      (fetch) => this.api.HEAD("/api/v2/assets/by-hash/{hash}", { params: { path: { hash } }, signal: options.signal, fetch }),
      [404],
    );
    if (known === 200) {
      try {
        const { data, url } = await this.call("idempotent", (fetch) =>
          this.api.POST("/api/v2/assets/from-hash", { body: { hash, file_path: filePath, tags: options.tags }, signal: options.signal, fetch }),
        );
        return { asset: withResolvedOutput(data, url), reused: true };
      } catch (err) {
        if (!(err instanceof BlobNotFoundError)) throw err; // gone since the HEAD: send the bytes
      }
    }
    const target = `${this.baseUrl}/api/v2/assets`;
    const blob = await blobOf(source);
    const res = await this.transport.send(() => {
      // Described fields first: the server hashes the file part as it streams in. A file-backed
      // Blob streams from disk on every attempt and is never held in memory.
      const form = new FormData();
      if (options.contentType) form.append("content_type", options.contentType);
      if (filePath) form.append("file_path", filePath);
      form.append("expected_hash", hash);
      for (const tag of options.tags ?? []) form.append("tags", tag);
      form.append("file", blob, filePath ?? "upload.bin");
      return new Request(target, { method: "POST", body: form, signal: options.signal });
    }, "rate-limit-only");
    if (!res.ok) throw await errorFromResponse(res, res.url || target);
    return { asset: withResolvedOutput(await successBody(res, "uploadAsset"), res.url || target), reused: false };
  }

  /** Reads an asset record (with a freshly signed `url`). */
  async getAsset(id: string, options: { signal?: AbortSignal } = {}): Promise<Asset> {
    const { data, url } = await this.call("idempotent", (fetch) =>
      this.api.GET("/api/v2/assets/{id}", { params: { path: { id } }, signal: options.signal, fetch }),
    );
    return withResolvedOutput(data, url);
  }

  /**
   * Downloads an output (or asset) to `dest` (a file path, or a folder to keep its name),
   * verifying size and blake3. An expired link is refreshed once from the asset record.
   */
  async download(item: Downloadable, dest: string, options: { signal?: AbortSignal } = {}): Promise<DownloadResult> {
    const path = await targetPath(item, dest);
    let res = await fetchWithoutCredentials(this.fetchImpl, item.url, options.signal);
    if (res.status === 403 || res.status === 401) {
      await res.body?.cancel();
      const fresh = await this.getAsset(item.id, options);
      res = await fetchWithoutCredentials(this.fetchImpl, fresh.url, options.signal);
    }
    return saveVerified(res, path, item, async () => (await this.getAsset(item.id, options).catch(() => null))?.hash ?? null);
  }

  /**
   * Runs a generated-client call through the transport and returns the body of its 2xx answer,
   * typed by the operation's declared responses; any other answer throws its typed error.
   */
  private async call<T>(
    policy: RetryPolicy,
    run: (fetch: (request: Request) => Promise<Response>) => Promise<CallResult<T>>,
  ): Promise<{ data: T; url: string }> {
    const { result, url } = await this.exchange(policy, run);
    const { data, error, response } = result;
    // Every operation called here answers a JSON body; a 2xx without one is no answer either.
    if (!response.ok || data === undefined) throw errorFromBody(response, error, url);
    return { data, url };
  }

  /** Runs a generated-client call whose answer has no body (HEAD) and returns its status; a non-2xx answer other than `allow` throws. */
  private async status(
    policy: RetryPolicy,
    run: (fetch: (request: Request) => Promise<Response>) => Promise<CallResult<unknown>>,
    allow: number[],
  ): Promise<number> {
    const { result, url } = await this.exchange(policy, run);
    if (!result.response.ok && !allow.includes(result.response.status)) throw errorFromBody(result.response, result.error, url);
    return result.response.status;
  }

  /** One generated-client call through the transport, with the URL its answer came from. */
  private async exchange<T>(
    policy: RetryPolicy,
    run: (fetch: (request: Request) => Promise<Response>) => Promise<CallResult<T>>,
  ): Promise<{ result: CallResult<T>; url: string }> {
    let requestUrl = this.baseUrl;
    const result = await run((request) => {
      requestUrl = request.url;
      return this.transport.send(() => request.clone(), policy);
    });
    // A response's own URL is where it came from after redirects; a synthetic one has none.
    return { result, url: result.response.url || requestUrl };
  }

  /** GET or POST a job link, returning the job it answers. */
  private async followJobLink(method: "GET" | "POST", url: string, signal?: AbortSignal): Promise<Job> {
    const res = await this.transport.send(
      () =>
        new Request(url, {
          method,
          signal,
          headers: method === "POST" ? { "content-type": "application/json" } : {},
          body: method === "POST" ? "{}" : undefined,
        }),
      "idempotent",
    );
    if (!res.ok) throw await errorFromResponse(res, res.url || url);
    return this.remember(withResolvedLinks(await successBody(res, method === "GET" ? "getJob" : "cancelJob"), res.url || url));
  }

  /** Opens an events link; anything but a 200 event stream is an error. */
  private async openEvents(url: string, signal: AbortSignal): Promise<Response> {
    // No retries here: stream() falls back to polling at once and honours Retry-After itself.
    const res = await this.transport.send(() => new Request(url, { headers: { accept: "text/event-stream" }, signal }), "none");
    if (!res.ok) throw await errorFromResponse(res, res.url || url);
    if (!res.body || !(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      await res.body?.cancel();
      throw new FlowgateApiError({ status: res.status, code: "not_an_event_stream", message: "The events link did not answer an event stream.", url });
    }
    return res;
  }

  private linkOf(ref: JobRef, which: "self" | "cancel"): string | undefined {
    if (typeof ref === "string") return this.links.get(ref)?.[which];
    return (withResolvedJobUrls(ref) ?? this.links.get(ref.id))?.[which];
  }

  private remember<T extends Job>(job: T): T {
    this.links.delete(job.id);
    this.links.set(job.id, job.urls);
    if (this.links.size > MAX_REMEMBERED_LINKS) this.links.delete(this.links.keys().next().value!);
    return job;
  }
}

/** The urls of a job passed in by the caller, when they are already absolute (as this client returns them). */
function withResolvedJobUrls(job: Pick<Job, "id" | "urls">): Job["urls"] | undefined {
  const absolute = (u: string | undefined) => typeof u === "string" && /^https?:\/\//i.test(u);
  return job.urls && absolute(job.urls.self) && absolute(job.urls.cancel) ? job.urls : undefined;
}
