// A compact in-memory implementation of the flowgate contract for the suite's own tests, on
// node:http: the v2 interface with a real event stream, the hosted interface and its WebSocket,
// three surface profiles, and breakages that violate one rule each (State.Breakage).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { handleHosted } from "./hosted.ts";
import { State, type DoubleOptions } from "./state.ts";
import { handleV2 } from "./v2.ts";
import { fail, hostedFail, send, type Req } from "./views.ts";
import { attachWs } from "./ws.ts";

export type { Breakage, DoubleOptions } from "./state.ts";

/** A running double. */
export interface Double {
  /** Origin of the server. */
  origin: string;
  /** Base URL to give the suite: the origin plus the mount prefix. */
  baseUrl: string;
  state: State;
  close(): Promise<void>;
}

/** Reads a body up to limit bytes; past it, drains the rest and returns undefined. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (c: Buffer) => {
      size += c.byteLength;
      if (size > limit) over = true;
      else chunks.push(c);
    });
    req.on("end", () => resolve(over ? undefined : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

async function handle(s: State, raw: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(raw.url ?? "/", "http://double");
  const origin = `http://${raw.headers.host}`;
  let path = url.pathname;
  const v2 = /\/api\/v2(\/|$)/.test(path);
  for (const [prefix, state] of Object.entries(s.o.deploymentStates)) {
    if (!path.startsWith(`${prefix}/`)) continue;
    await readBody(raw, s.o.bodyLimit);
    if (path === `${prefix}/api/v2/jobs` && raw.method === "POST") {
      return state === "not_ready"
        ? fail(res, 429, "deployment_not_ready", "The deployment is starting; retry later.", undefined, { "retry-after": "5" })
        : fail(res, 422, "deployment_stopped", "The deployment is stopped.");
    }
    return fail(res, 404, "not_found", "Not found.");
  }
  if (s.o.prefix) {
    if (!path.startsWith(`${s.o.prefix}/`)) return v2 ? fail(res, 404, "not_found", "Not found.") : send(res, 404);
    path = path.slice(s.o.prefix.length);
  }
  if (path === "/healthz") return send(res, 200, { status: "ok" });
  const body = raw.method === "GET" || raw.method === "HEAD" ? Buffer.alloc(0) : await readBody(raw, s.o.bodyLimit);
  if (!body)
    return v2
      ? fail(res, 413, "payload_too_large", "The request body is too large.")
      : hostedFail(res, 413, "payload_too_large", "The request body is too large.");
  const req: Req = { method: raw.method ?? "GET", path, query: url.searchParams, headers: raw.headers, body, origin, res, raw };
  if (v2) {
    const bearer = /^Bearer (.+)$/.exec(String(raw.headers.authorization ?? ""))?.[1];
    return handleV2(s, req, s.account(bearer));
  }
  if (path.startsWith("/api/") && s.o.hosted) {
    const auth = s.account(typeof raw.headers["x-api-key"] === "string" ? raw.headers["x-api-key"] : undefined);
    if (!("account" in auth)) return hostedFail(res, auth.status, auth.status === 403 ? "forbidden" : "unauthorized", "Invalid or missing API key.");
    return handleHosted(s, req, auth.account);
  }
  res.writeHead(404, { "content-type": "text/plain" });
  res.end("not found");
}

/** Starts a double on a free loopback port. */
export async function startDouble(options: DoubleOptions = {}): Promise<Double> {
  const state = new State(options);
  const server = createServer((req, res) => {
    handle(state, req, res).catch((e: Error) => {
      if (!res.headersSent) fail(res, 500, "upstream_error", "Something went wrong on our side. Please try again.");
      else res.end();
      console.error("double:", e);
    });
  });
  server.on("upgrade", attachWs(state));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    baseUrl: `${origin}${state.o.prefix}`,
    state,
    close: () =>
      new Promise((resolve) => {
        for (const j of state.jobs.values()) j.abort.abort();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
