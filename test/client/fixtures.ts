// Shared fixtures of the client and CLI tests: a real server, graphs, polling with a deadline,
// a fetch that records and injects faults, and a sleep that records what it was asked to wait.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/config.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { engineAdapter } from "../../src/jobs/engine-adapter.ts";
import { startServer } from "../../src/server/start.ts";
import { imageGraph as serverImageGraph, unique } from "../server/helpers.ts";

/** A real flowgate server on a free port with a fresh data dir. */
export interface TestServer {
  url: string;
  dataDir: string;
  stop(): Promise<void>;
}

/** Starts a server; `flags` as on the `flowgate serve` command line. */
export async function startTestServer(flags: string[] = []): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), "flowgate-client-"));
  const config = loadConfig(["--port", "0", "--data-dir", dataDir, ...flags], {});
  const server = await startServer(config, engineAdapter(new EmbeddedEngine({ partnerUrl: config.partnerUrl })), { quiet: true });
  return {
    url: server.url,
    dataDir,
    async stop() {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls `read` until `until` holds; fails with the last value at the deadline (never a fixed sleep). */
export async function waitFor<T>(read: () => Promise<T> | T, until: (value: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (until(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)?.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export { delayGraph, unique } from "../server/helpers.ts";

/** EmptyImage -> SaveImage: one PNG, quick. */
export function imageGraph(prefix = "client"): Record<string, unknown> {
  return serverImageGraph(prefix);
}

/** FlowgateSampler (steps, JPEG previews) -> SaveImage. */
export function samplerGraph(steps: number, size = 64): Record<string, unknown> {
  return {
    "1": { class_type: "FlowgateSampler", inputs: { seed: Math.floor(Math.random() * 1e12), steps, width: size, height: size } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "sampled" } },
  };
}

/** A graph that validates but fails at run time: the partner node on a server without a partner URL. */
export function failingGraph(): Record<string, unknown> {
  return {
    "1": { class_type: "FlowgatePartnerCall", inputs: { prompt: unique("p") } },
    "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
  };
}

/** One request the recording fetch saw. */
export interface SeenRequest {
  method: string;
  url: string;
  path: string;
  headers: Record<string, string>;
  /** What happened: the real status, an injected status, or "network-error". */
  outcome: number | "network-error";
  injected: boolean;
}

/** A fault to inject: requests matching `match` get `respond` (a Response or a thrown error), `times` times. */
export interface Fault {
  match: (request: Request) => boolean;
  respond: (request: Request) => Response | Error;
  times: number;
}

/** A fetch in front of the real server that records every request and injects faults. */
export class FaultyFetch {
  readonly seen: SeenRequest[] = [];
  private readonly faults: Fault[] = [];
  /** Rewrites real responses (after faults), e.g. to corrupt a body. */
  transform: ((request: Request, response: Response) => Response | Promise<Response>) | null = null;

  add(fault: Fault): this {
    this.faults.push(fault);
    return this;
  }

  readonly fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const entry: SeenRequest = {
      method: request.method,
      url: request.url,
      path: url.pathname,
      headers: headersOf(request),
      outcome: 0,
      injected: false,
    };
    this.seen.push(entry);
    const fault = this.faults.find((f) => f.times > 0 && f.match(request));
    if (fault) {
      fault.times--;
      entry.injected = true;
      const answer = fault.respond(request);
      if (answer instanceof Error) {
        entry.outcome = "network-error";
        throw answer;
      }
      entry.outcome = answer.status;
      return answer;
    }
    const response = await fetch(request);
    entry.outcome = response.status;
    return this.transform ? this.transform(request, response) : response;
  };

  /** Requests whose method and path match. */
  matching(method: string, path: RegExp): SeenRequest[] {
    return this.seen.filter((r) => r.method === method && path.test(r.path));
  }
}

/** An error envelope answer, as the server would send it. */
export function envelope(status: number, code: string, retryAfter?: number): Response {
  return new Response(JSON.stringify({ error: { code, message: `injected ${code}` } }), {
    status,
    headers: { "content-type": "application/json", ...(retryAfter !== undefined ? { "retry-after": String(retryAfter) } : {}) },
  });
}

/** What fetch throws when the server cannot be reached. */
export function networkError(): Error {
  return new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
}

/** A sleep that records each delay and waits only a moment, so backoff is observable without slow tests. */
export function recordingSleep(): { sleep: (ms: number, signal?: AbortSignal) => Promise<void>; delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    sleep: (ms, signal) => {
      delays.push(ms);
      return new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        setTimeout(resolve, Math.min(ms, 10));
      });
    },
  };
}

/** Matches requests by method and a path pattern. */
export function route(method: string, path: RegExp): (request: Request) => boolean {
  return (request) => request.method === method && path.test(new URL(request.url).pathname);
}

function headersOf(request: Request): Record<string, string> {
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return headers;
}
