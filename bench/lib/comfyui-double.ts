// A ComfyUI double for the comfyui scenario: ComfyUI's own server behaviour over flowgate's
// embedded engine, in a process of its own (bench/server-child.ts). What the front sees is what
// a ComfyUI on this machine does: one prompt at a time from a FIFO queue; a prompt's messages
// on its client's socket, `executed` for a node as soon as its files are written to the output
// folder (a plain write, as PIL's save is), then `execution_success` and the empty `executing`;
// `GET /view` answering the file's bytes; history, queue, interrupt and object_info. Written
// from ComfyUI's documented routes and messages (server.py, execution.py); not ComfyUI's code.
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { WebSocketServer, type WebSocket } from "ws";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { engineAdapter } from "../../src/jobs/engine-adapter.ts";
import type { EnginePort, RunEnd } from "../../src/jobs/engine-port.ts";

interface QueuedPrompt {
  id: string;
  number: number;
  prompt: Record<string, unknown>;
  clientId: string | null;
}

interface HistoryEntry {
  prompt: unknown[];
  outputs: Record<string, unknown>;
  status: { status_str: string; completed: boolean; messages: unknown[] };
}

/** A running double: its base URL and a stop. */
export interface ComfyDouble {
  url: string;
  close(): Promise<void>;
}

/** Starts the double on a free loopback port, writing outputs to `outputDir`. */
export async function startComfyDouble(outputDir: string): Promise<ComfyDouble> {
  mkdirSync(outputDir, { recursive: true });
  const engine: EnginePort = engineAdapter(new EmbeddedEngine({}));
  const definitions = await engine.nodeDefinitions();
  const sockets = new Map<WebSocket, string>();
  const pending: QueuedPrompt[] = [];
  const history = new Map<string, HistoryEntry>();
  let running: { entry: QueuedPrompt; abort: AbortController } | null = null;
  let number = 0;
  let fileCounter = 0;

  const send = (clientId: string | null, type: string, data: Record<string, unknown>) => {
    const text = JSON.stringify({ type, data });
    for (const [ws, id] of sockets) if ((clientId === null || id === clientId) && ws.readyState === ws.OPEN) ws.send(text);
  };
  const queueRemaining = () => pending.length + (running ? 1 : 0);
  const broadcastStatus = () => send(null, "status", { status: { exec_info: { queue_remaining: queueRemaining() } } });
  const entryOf = (p: QueuedPrompt) => [p.number, p.id, p.prompt, { client_id: p.clientId }, []];

  async function execute(p: QueuedPrompt, signal: AbortSignal): Promise<void> {
    const now = () => Date.now();
    send(p.clientId, "execution_start", { prompt_id: p.id, timestamp: now() });
    send(p.clientId, "execution_cached", { nodes: [], prompt_id: p.id, timestamp: now() });
    const outputs: Record<string, unknown> = {};
    const renamed = new Map<string, string>();
    let current: { node: string; classType: string } | null = null;
    const end: RunEnd = await engine.run(p.prompt, {
      jobId: p.id,
      signal,
      extra: {},
      resolveAsset: async () => null,
      resolveUpload: async () => null,
      onStart: () => undefined,
      onQueued: () => undefined,
      onRunning: () => undefined,
      onCached: () => undefined,
      onNodeStart: ({ node_id: node, class_type: classType }) => {
        current = { node, classType };
        send(p.clientId, "executing", { node, display_node: node, prompt_id: p.id });
      },
      onNodeDone: ({ node_id: node, ui }) => {
        if (!ui) return;
        // The file names this double wrote them under, as ComfyUI's counter makes them unique.
        const output = JSON.parse(JSON.stringify(ui), (k, v) => (k === "filename" && typeof v === "string" ? (renamed.get(v) ?? v) : v)) as Record<
          string,
          unknown
        >;
        outputs[node] = output;
        send(p.clientId, "executed", { node, display_node: node, output, prompt_id: p.id });
      },
      onProgress: ({ node_id: node, value, max }) => send(p.clientId, "progress", { value, max, prompt_id: p.id, node }),
      onPreview: () => undefined,
      onOutput: async (o) => {
        const name = `${o.name.replace(/_?\d*_?\.(\w+)$/, "")}_${String(++fileCounter).padStart(5, "0")}_.${o.name.split(".").pop()}`;
        renamed.set(o.name, name);
        writeFileSync(join(outputDir, name), o.data);
      },
      onLog: () => undefined,
    });
    const failed = end.kind !== "succeeded";
    history.set(p.id, {
      prompt: entryOf(p),
      outputs,
      status: { status_str: failed ? "error" : "success", completed: !failed, messages: [] },
    });
    const node = current as { node: string; classType: string } | null;
    if (end.kind === "succeeded") send(p.clientId, "execution_success", { prompt_id: p.id, timestamp: now() });
    else if (end.kind === "canceled")
      send(p.clientId, "execution_interrupted", {
        prompt_id: p.id,
        node_id: node?.node ?? null,
        node_type: node?.classType ?? null,
        executed: [],
        timestamp: now(),
      });
    else {
      send(p.clientId, "execution_error", {
        prompt_id: p.id,
        node_id: end.error.node_id ?? node?.node ?? null,
        node_type: end.error.class_type ?? node?.classType ?? null,
        executed: [],
        exception_message: end.error.message,
        exception_type: "Exception",
        traceback: [],
        current_inputs: {},
        current_outputs: {},
        timestamp: now(),
      });
    }
    send(p.clientId, "executing", { node: null, prompt_id: p.id });
  }

  /** The worker: one prompt at a time, in submission order. */
  function pump(): void {
    if (running || pending.length === 0) return;
    const entry = pending.shift()!;
    running = { entry, abort: new AbortController() };
    void execute(entry, running.abort.signal).finally(() => {
      running = null;
      broadcastStatus();
      pump();
    });
  }

  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://double");
    const path = url.pathname.replace(/^\/api(?=\/)/, "");
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>) : {};
    if (req.method === "GET" && path === "/object_info") return json(res, 200, definitions);
    // As ComfyUI started with --output-directory reports it (a front beside it finds the folder there).
    if (req.method === "GET" && path === "/system_stats")
      return json(res, 200, { system: { os: "posix", argv: ["main.py", "--output-directory", resolve(outputDir)] }, devices: [] });
    if (req.method === "GET" && path === "/prompt") return json(res, 200, { exec_info: { queue_remaining: queueRemaining() } });
    if (req.method === "POST" && path === "/prompt") {
      const prompt = body.prompt as Record<string, unknown>;
      const checked = await engine.validate(prompt);
      if (!checked.ok) {
        return json(res, 400, {
          error: { type: "prompt_outputs_failed_validation", message: "Prompt outputs failed validation", details: "", extra_info: {} },
          node_errors: checked.node_errors,
        });
      }
      const entry: QueuedPrompt = {
        id: typeof body.prompt_id === "string" ? body.prompt_id : randomUUID(),
        number: number++,
        prompt,
        clientId: typeof body.client_id === "string" ? body.client_id : null,
      };
      pending.push(entry);
      json(res, 200, { prompt_id: entry.id, number: entry.number, node_errors: {} });
      broadcastStatus();
      return pump();
    }
    if (req.method === "GET" && path === "/queue") {
      return json(res, 200, { queue_running: running ? [entryOf(running.entry)] : [], queue_pending: pending.map(entryOf) });
    }
    if (req.method === "POST" && path === "/queue") {
      const gone = new Set(Array.isArray(body.delete) ? body.delete.map(String) : body.clear === true ? pending.map((p) => p.id) : []);
      pending.splice(0, pending.length, ...pending.filter((p) => !gone.has(p.id)));
      broadcastStatus();
      return json(res, 200, {});
    }
    if (req.method === "POST" && path === "/interrupt") {
      if (running && (typeof body.prompt_id !== "string" || body.prompt_id === running.entry.id)) running.abort.abort();
      return json(res, 200, {});
    }
    if (req.method === "GET" && path.startsWith("/history")) {
      const id = decodeURIComponent(path.slice("/history/".length));
      if (path === "/history") return json(res, 200, Object.fromEntries(history));
      const entry = history.get(id);
      return json(res, 200, entry ? { [id]: entry } : {});
    }
    if (req.method === "GET" && path === "/view") {
      const root = resolve(outputDir);
      const file = resolve(join(root, url.searchParams.get("subfolder") ?? "", url.searchParams.get("filename") ?? ""));
      const inside = relative(root, file);
      if ((url.searchParams.get("type") ?? "output") !== "output" || inside === "" || inside.startsWith(`..${sep}`) || inside === ".." || isAbsolute(inside))
        return json(res, 404, {});
      let bytes: Buffer;
      try {
        bytes = readFileSync(file);
      } catch {
        return json(res, 404, {});
      }
      res.writeHead(200, {
        "content-type": file.endsWith(".png") ? "image/png" : "application/octet-stream",
        "content-length": bytes.length,
        "content-disposition": `filename="${inside}"`,
      });
      return void res.end(bytes);
    }
    return json(res, 404, {});
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) json(res, 500, { error: String(err) });
      else res.destroy();
    });
  });
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  server.on("upgrade", (req, socket, head) => {
    const url = new URL(req.url ?? "/", "http://double");
    if (url.pathname.replace(/^\/api(?=\/)/, "") !== "/ws") return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => {
      const sid = url.searchParams.get("clientId") ?? randomUUID().replace(/-/g, "");
      sockets.set(ws, sid);
      ws.on("close", () => sockets.delete(ws));
      ws.send(JSON.stringify({ type: "status", data: { status: { exec_info: { queue_remaining: queueRemaining() } }, sid } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        for (const ws of sockets.keys()) ws.terminate();
        server.close(() => r());
      }),
  };
}
