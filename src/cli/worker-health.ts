// `flowgate worker --health`: the worker's health checks over HTTP, for a container's HEALTHCHECK
// or a pod's probes (a worker serves no API). GET /healthz is 200 while the process runs; GET
// /readyz is the runtime's checks, as an API node's (200 or 503 with `checks`). Anything else is
// 404 in the contract's envelope.
import { createServer, type Server } from "node:http";
import type { Runtime } from "../runtime/runtime.ts";

export interface WorkerHealth {
  /** Where it listens, like http://127.0.0.1:8189. */
  url: string;
  close(): Promise<void>;
}

/** Listens on host:port until closed. */
export async function serveWorkerHealth(runtime: Pick<Runtime, "readiness">, host: string, port: number): Promise<WorkerHealth> {
  const server: Server = createServer((request, response) => {
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
      response.end(request.method === "HEAD" ? undefined : JSON.stringify(body));
    };
    const path = (request.url ?? "/").split("?")[0];
    const read = request.method === "GET" || request.method === "HEAD";
    if (read && path === "/healthz") return send(200, { status: "ok" });
    if (read && path === "/readyz") {
      runtime.readiness().then(
        (checks) => {
          const ready = Object.values(checks).every(Boolean);
          send(ready ? 200 : 503, { status: ready ? "ready" : "not_ready", checks });
        },
        () => send(503, { status: "not_ready", checks: {} }),
      );
      return;
    }
    send(404, { error: { code: "not_found", message: "A worker answers GET /healthz and GET /readyz only." } });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const bound = typeof address === "object" && address !== null ? address.port : port;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${bound}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
