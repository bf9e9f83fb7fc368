// Small node:http proxies the client tests put between the client and the real server:
// a gateway that mounts the server under a prefix, and a /api/view proxy whose redirects point
// at a recording server (the stand-in for a storage host).
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface RunningProxy {
  url: string;
  /** `METHOD path` of every request received. */
  seen: string[];
  /** Headers of every request received. */
  headers: http.IncomingHttpHeaders[];
  stop(): Promise<void>;
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function stopper(server: http.Server): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

/** Forwards a request to `target` + `path`; `onResponse` decides what goes back. */
function forward(req: http.IncomingMessage, res: http.ServerResponse, target: string, path: string, onResponse: (up: http.IncomingMessage) => void): void {
  const upstream = http.request(new URL(path, target), { method: req.method, headers: req.headers }, onResponse);
  upstream.on("error", () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(upstream);
}

/**
 * A gateway mounting the server under `prefix`: `/deployment/abc/*` is forwarded with the prefix
 * stripped; anything else is 404. The reference server emits links without the prefix, so
 * `/api/v2/` in JSON and event-stream bodies is rewritten to `prefix/api/v2/`, as a gateway's
 * server would write them.
 */
export async function startPrefixProxy(target: string, prefix = "/deployment/abc"): Promise<RunningProxy> {
  const seen: string[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  const rewrite = (text: string) => text.replaceAll("/api/v2/", `${prefix}/api/v2/`);
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    headers.push(req.headers);
    if (!req.url!.startsWith(`${prefix}/`)) {
      res.writeHead(404, { "content-type": "application/json" });
      return void res.end(JSON.stringify({ error: { code: "not_found", message: "Not under the gateway mount." } }));
    }
    forward(req, res, target, req.url!.slice(prefix.length), (up) => {
      const type = String(up.headers["content-type"] ?? "");
      const out = { ...up.headers };
      if (typeof out.location === "string") out.location = rewrite(out.location);
      if (type.startsWith("application/json")) {
        const chunks: Buffer[] = [];
        up.on("data", (c: Buffer) => chunks.push(c));
        up.on("end", () => {
          const body = Buffer.from(rewrite(Buffer.concat(chunks).toString("utf8")));
          delete out["transfer-encoding"];
          res.writeHead(up.statusCode!, { ...out, "content-length": String(body.length) });
          res.end(body);
        });
      } else if (type.startsWith("text/event-stream")) {
        delete out["content-length"];
        res.writeHead(up.statusCode!, out);
        res.flushHeaders();
        // The server writes each SSE frame whole, so a chunk never splits a link.
        up.on("data", (c: Buffer) => res.write(rewrite(c.toString("utf8"))));
        up.on("end", () => res.end());
        res.on("close", () => up.destroy());
      } else {
        res.writeHead(up.statusCode!, out);
        up.pipe(res);
      }
    });
  });
  const url = await listen(server);
  return { url, seen, headers, stop: stopper(server) };
}

/** A server that records each request's headers and forwards it to `target` (a stand-in storage host). */
export async function startRecordingForwarder(target: string): Promise<RunningProxy> {
  const seen: string[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    headers.push(req.headers);
    forward(req, res, target, req.url!, (up) => {
      res.writeHead(up.statusCode!, up.headers);
      up.pipe(res);
    });
  });
  const url = await listen(server);
  return { url, seen, headers, stop: stopper(server) };
}

/** A proxy in front of the server whose redirects (the 302 of /api/view) point at `redirectTo` instead. */
export async function startRedirectingProxy(target: string, redirectTo: string): Promise<RunningProxy> {
  const seen: string[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    headers.push(req.headers);
    forward(req, res, target, req.url!, (up) => {
      const out = { ...up.headers };
      if (typeof out.location === "string") {
        const location = new URL(out.location, target);
        out.location = redirectTo + location.pathname + location.search;
      }
      res.writeHead(up.statusCode!, out);
      up.pipe(res);
    });
  });
  const url = await listen(server);
  return { url, seen, headers, stop: stopper(server) };
}
