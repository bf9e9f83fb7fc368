// Shared fixtures of the server integration tests: a real server on a fresh data dir, an HTTP
// helper, response validation with the generated validators, an SSE reader, graphs, polling.
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { ValidateFunction } from "ajv";
import { expect } from "vitest";
import { routes } from "../../generated/routes.ts";
import * as v from "../../generated/validators.js";
import { InlineBlobs, type BlobStore, type FileBlobStore } from "../../src/blobs/index.ts";
import { loadConfig, type Config } from "../../src/config/config.ts";
import { EmbeddedEngine, type EmbeddedEngineOptions } from "../../src/engine/embedded-engine.ts";
import { engineAdapter } from "../../src/jobs/engine-adapter.ts";
import { startServer, type RunningServer } from "../../src/server/start.ts";
import { createTestSchema, dropTestSchema, schemaUrl } from "../postgres/pg.ts";
import { delayGraph as delayGraphOf } from "../fixtures/graphs.ts";

export { v };

export const ROOT = resolve(import.meta.dirname, "../..");
export const HOUR = 3_600_000;

/** A clock that follows real time plus an offset the test moves forward. */
export class TestClock {
  offset = 0;
  readonly now = (): number => Date.now() + this.offset;
  advance(ms: number): void {
    this.offset += ms;
  }
}

/** A running in-process server with its data dir and clock. */
export interface TestServer extends RunningServer {
  dataDir: string;
  config: Config;
  clock: TestClock;
  /** Requests against this server. */
  api: Api;
  /** Stops the server and removes the data dir. */
  stop(): Promise<void>;
}

export interface TestServerOptions {
  flags?: string[];
  config?: Partial<Config>;
  engine?: EmbeddedEngineOptions;
}

let database: "sqlite" | "postgres" = "sqlite";

/** Runs the servers of the test files imported after this call on PostgreSQL (the wrappers under test/server/postgres/). */
export function useDatabase(kind: "sqlite" | "postgres"): void {
  database = kind;
}

/** The database of the servers this test file starts. */
export function databaseKind(): "sqlite" | "postgres" {
  return database;
}

/** Starts a server on port 0 with a fresh data dir (and a fresh PostgreSQL schema after useDatabase("postgres")). */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), "flowgate-server-"));
  const schema = database === "postgres" ? await createTestSchema() : null;
  const config: Config = {
    ...loadConfig(["--data-dir", dataDir, "--port", "0", ...(schema === null ? [] : ["--database-url", schemaUrl(schema)]), ...(options.flags ?? [])], {}),
    reaperIntervalMs: 3_600_000,
    ...options.config,
  };
  const clock = new TestClock();
  const server = await startServer(config, engineAdapter(new EmbeddedEngine(options.engine ?? {})), { quiet: true, now: clock.now });
  let stopped = false;
  return {
    ...server,
    dataDir,
    config,
    clock,
    api: new Api(server.url),
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.close();
      await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
      if (schema !== null) await dropTestSchema(schema);
    },
  };
}

/** One HTTP answer: status, headers, raw text and parsed JSON (when JSON). */
export interface Res<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

export interface RequestOptions {
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  token?: string;
}

/** Requests against one origin; every answer is read whole. */
export class Api {
  readonly base: string;
  /** Every response body this helper read (for secret scans). */
  readonly seen: string[] = [];
  token: string | undefined;

  constructor(base: string, token?: string) {
    this.base = base;
    this.token = token;
  }

  async request<T = any>(method: string, path: string, o: RequestOptions = {}): Promise<Res<T>> {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    const token = o.token ?? this.token;
    if (token !== undefined && !("authorization" in headers)) headers.authorization = `Bearer ${token}`;
    let body = o.body;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers["content-type"] ??= "application/json";
    }
    const url = path.startsWith("http") ? path : this.base + path;
    const res = await fetch(url, { method, headers, body, redirect: "manual" });
    const text = await res.text();
    this.seen.push(text);
    let parsed: unknown;
    if ((res.headers.get("content-type") ?? "").includes("json") && text !== "") parsed = JSON.parse(text);
    const answer = { status: res.status, headers: res.headers, text, body: parsed as T };
    checkAgainstSpec(method, url, answer);
    return answer;
  }

  get<T = any>(path: string, o?: RequestOptions) {
    return this.request<T>("GET", path, o);
  }

  post<T = any>(path: string, json?: unknown, o: RequestOptions = {}) {
    return this.request<T>("POST", path, json === undefined ? o : { ...o, json });
  }

  /** POST /api/v2/jobs, expecting 201, validated. */
  async submit(workflow: Record<string, unknown>, o: { extra_data?: Record<string, unknown>; key?: string } = {}): Promise<any> {
    const res = await this.post(
      "/api/v2/jobs",
      { workflow, ...(o.extra_data ? { extra_data: o.extra_data } : {}) },
      o.key ? { headers: { "idempotency-key": o.key } } : {},
    );
    expect(res.status, res.text).toBe(201);
    expectValid(v.response_createJob_201, res.body, "createJob 201");
    return res.body;
  }

  /** GET /api/v2/jobs/{id}, expecting 200, validated. */
  async job(id: string): Promise<any> {
    const res = await this.get(`/api/v2/jobs/${id}`);
    expect(res.status, res.text).toBe(200);
    expectValid(v.response_getJob_200, res.body, "getJob 200");
    return res.body;
  }

  /** Polls GET until `until(job)` holds. */
  async waitJob(id: string, until: (job: any) => boolean, what = "job condition", timeoutMs = 15_000): Promise<any> {
    return waitFor(() => this.job(id), until, what, timeoutMs);
  }

  /** Polls until the job is terminal. */
  waitTerminal(id: string, timeoutMs?: number): Promise<any> {
    return this.waitJob(id, (j) => TERMINAL.includes(j.status), "terminal status", timeoutMs);
  }
}

export const TERMINAL = ["succeeded", "canceled", "failed", "expired"];

const specRoutes = routes.filter((r) => r.family !== "hosted").map((r) => ({ route: r, pattern: new RegExp(`^${r.path.replace(/\{[^}]+\}/g, "[^/]+")}$`) }));

/**
 * Every answer the Api helper reads is checked against the spec: the status must be one the
 * operation declares, a JSON body must match that response's validator, a 429 carries an integer
 * Retry-After, and a v2 path no operation serves answers in the error envelope.
 */
export function checkAgainstSpec(method: string, url: string, res: Res): void {
  const path = new URL(url).pathname;
  const find = (m: string) => specRoutes.find((x) => x.route.method === m && x.pattern.test(path));
  const match = find(method) ?? (method === "HEAD" ? find("GET") : undefined);
  if (!match) {
    if (path.startsWith("/api/v2") && res.body !== undefined) expectValid(v.schema_ErrorEnvelope, res.body, `${method} ${path} ${res.status}`);
    return;
  }
  const { route } = match;
  const declared = route.responses[String(res.status)];
  if (!declared) throw new Error(`${route.operationId} answered ${res.status}, which spec/openapi.yaml does not declare: ${res.text.slice(0, 300)}`);
  if (declared.validator && res.body !== undefined)
    expectValid((v as unknown as Record<string, ValidateFunction>)[declared.validator]!, res.body, `${route.operationId} ${res.status}`);
  if (declared.errorCodes.length > 0 && res.body !== undefined)
    expect(declared.errorCodes, `${route.operationId} ${res.status}`).toContain(res.body.error.code);
  if (declared.retryAfter) expect(res.headers.get("retry-after") ?? "").toMatch(/^\d+$/);
}

/** Fails with the ajv errors when `data` does not match. */
export function expectValid(validate: ValidateFunction, data: unknown, label = "body"): void {
  if (!validate(data)) {
    throw new Error(`${label} does not match the spec: ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(data)}`);
  }
}

/** Checks an error answer: status, envelope (generic and the operation's own validator), code. */
export function expectError(res: Res, status: number, code: string, validator?: ValidateFunction): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get("content-type") ?? "").toContain("application/json");
  expectValid(v.schema_ErrorEnvelope, res.body, `${code} envelope`);
  if (validator) expectValid(validator, res.body, `${code} response`);
  expect(res.body.error.code).toBe(code);
  if (status === 429) expect(res.headers.get("retry-after") ?? "").toMatch(/^\d+$/);
}

/** Polls `read` until `until` holds or the deadline passes (never a fixed sleep). */
/**
 * Whether a blob's bytes are stored for good: its file (a staged blob counts once named), or, on
 * PostgreSQL (InlineBlobs), its file or its bytes in the database.
 */
export async function blobStored(blobs: BlobStore, key: string): Promise<boolean> {
  return blobs instanceof InlineBlobs ? blobs.has(key) : existsSync((blobs as FileBlobStore).pathOf(key));
}

export async function waitFor<T>(read: () => Promise<T> | T, until: (value: T) => boolean, what = "condition", timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await read();
    if (until(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)?.slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

// --- graphs ------------------------------------------------------------------------------

/** A unique string, so the engine's result cache never serves a node of another test. */
export function unique(prefix = "t"): string {
  return `${prefix}-${randomUUID()}`;
}

/** EmptyImage -> SaveImage: one PNG output, quick. */
export function imageGraph(prefix = "flowgate", color = Math.floor(Math.random() * 0xffffff)): Record<string, unknown> {
  return {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: prefix } },
  };
}

/** PrimitiveString -> FlowgateDelay -> PreviewAny: runs `seconds`, cancellable. */
export function delayGraph(seconds: number): Record<string, unknown> {
  return delayGraphOf(seconds, unique("delay"));
}

/** An image saved at once, and a delay that keeps the job running for `seconds`. */
export function outputThenDelayGraph(seconds: number): Record<string, unknown> {
  return {
    ...imageGraph("early"),
    "10": { class_type: "PrimitiveString", inputs: { value: unique("hold") } },
    "11": { class_type: "FlowgateDelay", inputs: { value: ["10", 0], seconds } },
    "12": { class_type: "PreviewAny", inputs: { source: ["11", 0] } },
  };
}

// --- SSE ---------------------------------------------------------------------------------

export interface SseEvent {
  event: string;
  data: string;
  json: any;
}

/** A live SSE connection: parsed events and comments, the raw text, and when it ended. */
export class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  raw = "";
  status = 0;
  headers: Headers | null = null;
  ended = false;
  readonly done: Promise<void>;
  private readonly controller = new AbortController();
  private waiters: Array<() => void> = [];

  constructor(url: string, token?: string) {
    this.done = this.run(url, token);
  }

  private async run(url: string, token?: string): Promise<void> {
    try {
      const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: this.controller.signal });
      this.status = res.status;
      this.headers = res.headers;
      this.wake();
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        this.raw += text;
        buffer += text;
        let at: number;
        while ((at = buffer.indexOf("\n\n")) !== -1) {
          this.parse(buffer.slice(0, at));
          buffer = buffer.slice(at + 2);
        }
        this.wake();
      }
    } catch (err) {
      if (!this.controller.signal.aborted) throw err;
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  private parse(block: string): void {
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) this.comments.push(line.slice(1).trim());
      else if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (data.length === 0) return;
    const text = data.join("\n");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      // left undefined; the test will say so
    }
    this.events.push({ event, data: text, json });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Waits until `until(this)` holds (checked on every chunk), or fails at the deadline. */
  async waitUntil(until: (c: SseClient) => boolean, what: string, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!until(this)) {
      if (this.ended && !until(this))
        throw new Error(`stream ended before ${what}; events: ${this.events.map((e) => `${e.event}:${e.json?.status ?? ""}`).join(",")}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; events: ${this.events.map((e) => e.event).join(",")}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  of(name: string): SseEvent[] {
    return this.events.filter((e) => e.event === name);
  }

  close(): void {
    this.controller.abort();
  }
}

/** Checks every event of a stream against the AsyncAPI payload validators; `status` never has logs. */
export function expectSseEventsValid(events: SseEvent[]): void {
  const validators: Record<string, ValidateFunction> = {
    status: v.event_sse_status,
    progress: v.event_sse_progress,
    preview: v.event_sse_preview,
    output: v.event_sse_output,
    log: v.event_sse_log,
  };
  for (const e of events) {
    expect(Object.keys(validators), `unknown event ${e.event}`).toContain(e.event);
    expectValid(validators[e.event]!, e.json, `SSE ${e.event}`);
    if (e.event === "status") expect(e.json).not.toHaveProperty("logs");
  }
}

// --- multipart ---------------------------------------------------------------------------

/** A multipart body with fields in the given order; `file` entries carry bytes. */
export function multipart(parts: Array<{ name: string; value: string } | { name: string; file: Uint8Array; filename?: string; type?: string }>): {
  body: Buffer;
  contentType: string;
} {
  const boundary = `----flowgate${randomUUID()}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    if ("file" in p) {
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename ?? "blob.bin"}"\r\nContent-Type: ${p.type ?? "application/octet-stream"}\r\n\r\n`,
        ),
        Buffer.from(p.file),
        Buffer.from("\r\n"),
      );
    } else {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`));
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** POST /api/v2/assets with the parts given. */
export function upload(api: Api, parts: Parameters<typeof multipart>[0], o: RequestOptions = {}): Promise<Res> {
  const { body, contentType } = multipart(parts);
  return api.request("POST", "/api/v2/assets", { ...o, body: new Uint8Array(body), headers: { ...(o.headers ?? {}), "content-type": contentType } });
}

// --- files and processes -----------------------------------------------------------------

/** Every regular file under `dir`, recursively. */
export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(path)));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** Blob files (not temp files) under a data dir. */
export async function blobFiles(dataDir: string): Promise<string[]> {
  return (await listFiles(join(dataDir, "blobs"))).filter((p) => !p.includes(`${join("blobs", "tmp")}`));
}

/** Files under `dir` whose bytes contain `needle` (UTF-8 or UTF-16LE). */
export async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  const forms = [Buffer.from(needle, "utf8"), Buffer.from(needle, "utf16le")];
  for (const path of await listFiles(dir)) {
    const info = await stat(path).catch(() => null);
    if (!info) continue;
    const bytes = await readFile(path).catch(() => null);
    if (bytes && forms.some((f) => bytes.includes(f))) hits.push(path);
  }
  return hits;
}

/** A `flowgate serve` child process: its URL once listening, and everything it printed. */
export interface CliServer {
  child: ChildProcess;
  url: string;
  output(): string;
  /** Resolves with the exit code or signal. */
  exited: Promise<number | string | null>;
}

/**
 * Spawns `node bin/flowgate.js serve ...args` and waits for its "listening on" line. `env` is
 * added to this process's environment, or replaces it with `replaceEnv`.
 */
export async function spawnCli(
  args: string[],
  env: Record<string, string> | NodeJS.ProcessEnv = {},
  options: { replaceEnv?: boolean } = {},
): Promise<CliServer> {
  const child = spawn(process.execPath, [join(ROOT, "bin/flowgate.js"), "serve", ...args], {
    cwd: ROOT,
    env: options.replaceEnv ? env : { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string | null>((r) => child.on("exit", (code, signal) => r(signal ?? code)));
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`flowgate serve did not start:\n${out}`)), 30_000);
    const check = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolveUrl(m[1]!);
      }
    };
    child.stdout!.on("data", check);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`flowgate serve exited early:\n${out}`));
    });
  });
  return { child, url, output: () => out, exited };
}

/** A raw GET torn down once `abortAfter` says: a stage of the exchange, or a promise settling. */
export function rawGet(url: string, abortAfter: "sent" | "headers" | "first-byte" | Promise<unknown>): Promise<void> {
  return new Promise((resolveDone) => {
    const req = http.get(url, (res) => {
      if (abortAfter === "headers") return void req.destroy();
      res.once("data", () => req.destroy());
      res.once("end", () => resolveDone());
    });
    req.on("error", () => undefined);
    req.on("close", () => resolveDone());
    if (abortAfter === "sent") setImmediate(() => req.destroy());
    else if (typeof abortAfter !== "string") void abortAfter.then(() => req.destroy());
  });
}
