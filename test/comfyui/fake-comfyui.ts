// A small ComfyUI stand-in (node:http + ws) for replay tests: it records every request, keeps
// a queue and a history the test controls, serves files for /view, and sends whatever message
// sequence a test scripts over /ws. Written from ComfyUI's documented routes and messages.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

export interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  body: Buffer;
  json: any;
}

export interface FakeOptions {
  objectInfo: Record<string, unknown>;
  /** Answers POST /prompt: a status and body, or undefined for ComfyUI's usual 200 (prompt_id echoed). */
  onPrompt?: (body: any) => { status: number; body: unknown } | undefined;
  /** Runs (awaited) when a request arrived, before it is answered: e.g. to stop the client that sent it. */
  onRequest?: (request: Recorded) => void | Promise<void>;
  /** Runs after a prompt was queued and before POST /prompt answers (messages may beat the answer). */
  beforeAnswer?: (promptId: string) => void;
  /** Status of POST /interrupt (default 200); 404 as a ComfyUI without the route answers. */
  interruptStatus?: number;
  /** The `argv` GET /system_stats reports; without it the route answers 404, as flowgate's does. */
  systemArgv?: string[];
  /** What GET /internal/folder_paths answers; without it the route answers 404. */
  folderPaths?: Record<string, unknown>;
  /**
   * Runs queued prompts itself, one at a time and in order (unless `paused`), as ComfyUI's
   * worker does: its messages, `executed` with a text ui for output nodes, a history entry.
   */
  worker?: boolean;
  /** Drops the connection of a POST /prompt without an answer, before or after queueing the prompt (its fate unknown to the client). */
  dropPrompt?: (body: any) => "before" | "after" | undefined;
  /** With `worker`: how long a prompt's first node takes (a long node; an interrupt for the prompt ends it interrupted). */
  runMs?: (promptId: string) => number;
  /** With `worker`: told when an execution starts and ends (ComfyUI's timestamps), e.g. to keep a count that outlives this double. */
  onExecution?: (event: { type: "start" | "end"; promptId: string; at: number; status?: "success" | "error" | "interrupted" }) => void;
  /** With `worker`: the prompt fails at this node with ComfyUI's execution_error (exception type and message), instead of succeeding. */
  fail?: (promptId: string) => { node: string; exception_type: string; exception_message: string } | undefined;
}

/** One scripted ComfyUI. */
export class FakeComfyUI {
  readonly requests: Recorded[] = [];
  readonly history = new Map<string, unknown>();
  readonly files = new Map<string, { bytes: Buffer; contentType: string }>();
  readonly queue: { running: string[]; pending: string[] } = { running: [], pending: [] };
  /** First text message of every socket (the feature_flags handshake). */
  readonly handshakes: any[] = [];
  /** The URL of every WebSocket connection. */
  readonly connections: string[] = [];
  /** The Sec-WebSocket-Extensions every connection offered ("" when none). */
  readonly offeredExtensions: string[] = [];
  /** Close every socket right after its status message, as a server dropping idle sockets does. */
  closeIdleSockets = false;
  /** Executions per prompt id: like ComfyUI, the double runs a prompt id queued twice twice. */
  readonly executions = new Map<string, number>();
  /** Status of POST /interrupt (from FakeOptions.interruptStatus; a test may change it). */
  interruptStatus: number;
  /** With `worker`: takes no prompt from the queue while set (see `resume`). */
  paused = false;
  /** With `worker`: a prompt that starts while set stops at its first node (or at `holdAt`) until `release` (a long node). */
  holding = false;
  /** The node a held prompt stops at (default: its first). */
  holdAt: string | null = null;
  /** The prompt held at its first node now (see `holding`), if any. */
  held: string | null = null;
  private releaseHeld: (() => void) | null = null;
  /** The prompt whose long first node (`runMs`) runs now, and what ends that node early. */
  private longNode: { id: string; interrupt: () => void } | null = null;
  /** An interrupt came for the held prompt: it ends interrupted when released. */
  private interrupting = false;
  url = "";
  private working = false;
  /** The bodies of each prompt id's copies not started yet, in arrival order (the last one stays, for a prompt run by hand). */
  private readonly bodies = new Map<string, any[]>();
  private readonly server: http.Server;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sockets = new Set<WebSocket>();
  /** The client id each socket connected with (`/ws?clientId=`). */
  private readonly clientIds = new Map<WebSocket, string | null>();
  private promptWaiters: Array<(body: any) => void> = [];
  private readonly prompts: any[] = [];
  private counter = 0;

  private readonly o: FakeOptions;

  constructor(o: FakeOptions) {
    this.o = o;
    this.interruptStatus = o.interruptStatus ?? 200;
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.on("upgrade", (req, socket, head) => {
      this.connections.push(req.url ?? "");
      this.offeredExtensions.push(String(req.headers["sec-websocket-extensions"] ?? ""));
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        this.sockets.add(ws);
        this.clientIds.set(ws, new URL(req.url ?? "/", "http://x").searchParams.get("clientId"));
        let first = true;
        ws.on("message", (data, isBinary) => {
          if (first && !isBinary) this.handshakes.push(JSON.parse(String(data)));
          first = false;
        });
        ws.on("close", () => {
          this.sockets.delete(ws);
          this.clientIds.delete(ws);
        });
        ws.send(
          JSON.stringify({
            type: "status",
            data: { status: { exec_info: { queue_remaining: this.queue.running.length + this.queue.pending.length } }, sid: "x" },
          }),
        );
        if (this.closeIdleSockets) ws.close(1000);
      });
    });
  }

  /** Listens on a free port (or `port`), on loopback (or `host`). */
  async start(port = 0, host = "127.0.0.1"): Promise<this> {
    await new Promise<void>((r) => this.server.listen(port, host, r));
    this.url = `http://${host}:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Stops listening and drops every socket (a ComfyUI that went away). */
  async stop(): Promise<void> {
    for (const ws of this.sockets) ws.terminate();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** Open sockets. */
  get socketCount(): number {
    return this.sockets.size;
  }

  /** Resolves with the body of the next POST /prompt (or one already received and not taken). */
  nextPrompt(): Promise<any> {
    const ready = this.prompts.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((r) => this.promptWaiters.push(r));
  }

  /** Sends a JSON message to every socket. */
  send(type: string, data: Record<string, unknown>): void {
    for (const ws of this.sockets) ws.send(JSON.stringify({ type, data }));
  }

  /** Sends a JSON message to the sockets of one client id, or to every socket when null (ComfyUI's send_sync with a sid). */
  sendTo(clientId: string | null, type: string, data: Record<string, unknown>): void {
    if (clientId === null) return this.send(type, data);
    for (const ws of this.sockets) if (this.clientIds.get(ws) === clientId) ws.send(JSON.stringify({ type, data }));
  }

  /** Sends the queue's size to every socket, as ComfyUI does on every change of its queue. */
  broadcastStatus(): void {
    this.send("status", { status: { exec_info: { queue_remaining: this.queue.running.length + this.queue.pending.length } } });
  }

  /** Sends a binary frame to every socket. */
  sendBinary(frame: Buffer): void {
    for (const ws of this.sockets) ws.send(frame);
  }

  /** Closes every socket from the server side. */
  dropSockets(): void {
    for (const ws of this.sockets) ws.terminate();
  }

  /** Requests to a path. */
  calls(method: string, path: string): Recorded[] {
    return this.requests.filter((r) => r.method === method && r.path === path);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? "/", "http://x");
    const isJson = (req.headers["content-type"] ?? "").includes("json");
    const rec: Recorded = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      body,
      json: isJson && body.length ? JSON.parse(body.toString()) : null,
    };
    this.requests.push(rec);
    await this.o.onRequest?.(rec);
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };
    const p = url.pathname;
    if (req.method === "GET" && p === "/object_info") return json(200, this.o.objectInfo);
    if (req.method === "GET" && p === "/system_stats" && this.o.systemArgv) return json(200, { system: { os: "posix", argv: this.o.systemArgv }, devices: [] });
    if (req.method === "GET" && p === "/internal/folder_paths" && this.o.folderPaths) return json(200, this.o.folderPaths);
    if (req.method === "GET" && p === "/prompt") return json(200, { exec_info: { queue_remaining: this.queue.running.length + this.queue.pending.length } });
    if (req.method === "GET" && p === "/queue") {
      return json(200, {
        queue_running: this.queue.running.map((id, i) => [i, id, {}, {}, []]),
        queue_pending: this.queue.pending.map((id, i) => [i, id, {}, {}, []]),
      });
    }
    if (req.method === "POST" && p === "/prompt") {
      const answer = this.o.onPrompt?.(rec.json);
      if (answer) return json(answer.status, answer.body);
      const drop = this.o.dropPrompt?.(rec.json);
      if (drop === "before") return void res.destroy();
      const id = typeof rec.json.prompt_id === "string" ? rec.json.prompt_id : `p-${++this.counter}`;
      this.queue.pending.push(id);
      this.bodies.set(id, [...(this.bodies.get(id) ?? []), rec.json]);
      this.broadcastStatus();
      this.o.beforeAnswer?.(id);
      if (drop === "after") {
        res.destroy();
        return void this.work();
      }
      json(200, { prompt_id: id, number: this.counter, node_errors: {} });
      void this.work();
      const waiter = this.promptWaiters.shift();
      if (waiter) waiter({ ...rec.json, prompt_id: id });
      else this.prompts.push({ ...rec.json, prompt_id: id });
      return;
    }
    if (req.method === "POST" && p === "/queue") {
      // Like ComfyUI's delete_queue_item: each id given removes the first pending copy of that id
      // only (a prompt id queued twice leaves one copy behind).
      for (const id of (rec.json?.delete ?? []) as string[]) {
        const at = this.queue.pending.indexOf(id);
        if (at >= 0) this.queue.pending.splice(at, 1);
        const copies = this.bodies.get(id);
        if (at >= 0 && copies && copies.length > 1) copies.shift();
      }
      this.broadcastStatus();
      return void res.writeHead(200).end();
    }
    if (req.method === "POST" && p === "/interrupt") {
      // The held prompt (with `worker`), when it is the one named, ends interrupted, as ComfyUI's worker does.
      const status = this.interruptStatus;
      if (status === 200 && this.held !== null && (rec.json?.prompt_id ?? this.held) === this.held) {
        this.interrupting = true;
        this.release();
      } else if (status === 200 && this.longNode !== null && (rec.json?.prompt_id ?? this.longNode.id) === this.longNode.id) {
        this.interrupting = true;
        this.longNode.interrupt();
      }
      return void res.writeHead(status).end();
    }
    if (req.method === "GET" && p === "/history") return json(200, Object.fromEntries(this.history));
    if (req.method === "GET" && p.startsWith("/history/")) {
      const id = decodeURIComponent(p.slice("/history/".length));
      return json(200, this.history.has(id) ? { [id]: this.history.get(id) } : {});
    }
    if (req.method === "POST" && p === "/upload/image") {
      const name = /filename="([^"]+)"/.exec(body.toString("latin1"))?.[1] ?? "upload.bin";
      return json(200, { name, subfolder: "", type: "input" });
    }
    if (req.method === "GET" && p === "/view") {
      const key = `${url.searchParams.get("type")}/${url.searchParams.get("subfolder") ?? ""}/${url.searchParams.get("filename")}`;
      const file = this.files.get(key);
      if (!file) return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": file.contentType });
      return void res.end(file.bytes);
    }
    res.writeHead(404).end();
  }

  /** Lets the worker take prompts again. */
  resume(): void {
    this.paused = false;
    void this.work();
  }

  /** Lets the prompt held at its first node go on (and the ones after it run through). */
  release(): void {
    this.holding = false;
    const go = this.releaseHeld;
    this.releaseHeld = null;
    go?.();
  }

  /** Runs the next pending prompt now, paused or not (a ComfyUI working while flowgate is down). */
  async runNext(): Promise<void> {
    const id = this.queue.pending[0];
    if (id !== undefined) await this.execute(id);
  }

  private async work(): Promise<void> {
    if (!this.o.worker || this.working) return;
    this.working = true;
    try {
      while (!this.paused && this.queue.pending.length > 0) await this.execute(this.queue.pending[0]!);
    } finally {
      this.working = false;
    }
  }

  /** One execution of a prompt, with ComfyUI's messages and history entry. */
  private async execute(id: string): Promise<void> {
    this.startRunning(id);
    this.executions.set(id, (this.executions.get(id) ?? 0) + 1);
    // Each copy of a prompt id queued twice keeps its own body, as ComfyUI's queue items do.
    const copies = this.bodies.get(id);
    const body = copies && copies.length > 1 ? copies.shift() : copies?.[0];
    const prompt: Record<string, { class_type: string }> = body?.prompt ?? {};
    // Like ComfyUI, a prompt's messages go to the client that queued it (all clients when it named none).
    const clientId: string | null = body?.client_id ?? null;
    const messages: [string, Record<string, unknown>][] = [];
    const tick = () => new Promise((r) => setImmediate(r));
    const recorded = (type: string, data: Record<string, unknown>) => {
      messages.push([type, data]);
      this.sendTo(clientId, type, data);
    };
    const startedAt = Date.now();
    recorded("execution_start", { prompt_id: id, timestamp: startedAt });
    this.o.onExecution?.({ type: "start", promptId: id, at: startedAt });
    recorded("execution_cached", { nodes: [], prompt_id: id, timestamp: Date.now() });
    const outputs: Record<string, unknown> = {};
    const failure = this.o.fail?.(id);
    for (const [index, [node, n]] of Object.entries(prompt).entries()) {
      this.sendTo(clientId, "executing", { node, display_node: node, prompt_id: id });
      await tick();
      const longMs = index === 0 ? (this.o.runMs?.(id) ?? 0) : 0;
      if (longMs > 0) {
        await new Promise<void>((r) => {
          const t = setTimeout(r, longMs);
          this.longNode = {
            id,
            interrupt: () => {
              clearTimeout(t);
              r();
            },
          };
        });
        this.longNode = null;
      }
      const holdHere = this.holding && (this.holdAt === null ? index === 0 : node === this.holdAt);
      if (holdHere) {
        this.held = id;
        await new Promise<void>((r) => (this.releaseHeld = r));
        this.held = null;
      }
      if (holdHere || longMs > 0) {
        if (this.interrupting) {
          this.interrupting = false;
          const at = Date.now();
          recorded("execution_interrupted", { prompt_id: id, node_id: node, node_type: n.class_type, executed: Object.keys(outputs), timestamp: at });
          this.o.onExecution?.({ type: "end", promptId: id, at, status: "interrupted" });
          this.finish(id, { prompt: [this.counter, id, prompt, {}, []], outputs, status: { status_str: "error", completed: false, messages }, meta: {} });
          await tick();
          return;
        }
      }
      if (failure?.node === node) {
        const error = {
          prompt_id: id,
          node_id: node,
          node_type: n.class_type,
          executed: Object.keys(outputs),
          exception_message: failure.exception_message,
          exception_type: failure.exception_type,
          traceback: [`${failure.exception_type}: ${failure.exception_message}\n`],
          current_inputs: {},
          current_outputs: {},
          timestamp: Date.now(),
        };
        recorded("execution_error", error);
        this.o.onExecution?.({ type: "end", promptId: id, at: error.timestamp, status: "error" });
        this.finish(id, { prompt: [this.counter, id, prompt, {}, []], outputs, status: { status_str: "error", completed: false, messages }, meta: {} });
        await tick();
        return;
      }
      const def = this.o.objectInfo[n.class_type] as { output_node?: boolean } | undefined;
      if (def?.output_node) {
        const ui = { text: [`${id}:${node}`] };
        outputs[node] = ui;
        this.sendTo(clientId, "executed", { node, display_node: node, output: ui, prompt_id: id });
      }
    }
    const endedAt = Date.now();
    recorded("execution_success", { prompt_id: id, timestamp: endedAt });
    this.o.onExecution?.({ type: "end", promptId: id, at: endedAt, status: "success" });
    this.sendTo(clientId, "executing", { node: null, prompt_id: id });
    this.finish(id, {
      prompt: [this.counter, id, prompt, {}, Object.keys(outputs)],
      outputs,
      status: { status_str: "success", completed: true, messages },
      meta: {},
    });
    await tick();
  }

  /**
   * Moves a prompt from pending to running, as ComfyUI's worker does: one copy of it (a prompt id
   * queued twice leaves the other copy pending, to run again).
   */
  startRunning(id: string): void {
    removeOne(this.queue.pending, id);
    this.queue.running.push(id);
  }

  /** Takes a prompt out of the queue (one copy: the running one, else the first pending) and writes its history entry (task_done). */
  finish(id: string, entry: unknown): void {
    if (!removeOne(this.queue.running, id)) removeOne(this.queue.pending, id);
    this.history.set(id, entry);
    this.broadcastStatus();
  }

  /** When the double recorded a finished prompt's start and end (its history messages' `timestamp`s). */
  recordedTimes(id: string): { startedAt: number; endedAt: number } {
    const messages = (this.history.get(id) as { status: { messages: [string, { timestamp?: number }][] } } | undefined)?.status.messages ?? [];
    const at = (types: string[]) => messages.find(([t]) => types.includes(t))?.[1].timestamp;
    const startedAt = at(["execution_start"]);
    const endedAt = at(["execution_success", "execution_error", "execution_interrupted"]);
    if (startedAt === undefined || endedAt === undefined) throw new Error(`prompt ${id} has no finished history entry`);
    return { startedAt, endedAt };
  }

  /** Forgets a prompt entirely (a restarted ComfyUI). */
  forget(id: string): void {
    this.queue.pending = this.queue.pending.filter((p) => p !== id);
    this.queue.running = this.queue.running.filter((p) => p !== id);
    this.history.delete(id);
  }
}

/** Removes the first copy of `id` from `list`; whether there was one. */
function removeOne(list: string[], id: string): boolean {
  const at = list.indexOf(id);
  if (at >= 0) list.splice(at, 1);
  return at >= 0;
}

/** A type-4 preview frame: type, metadata length, metadata JSON, image. */
export function previewFrame(meta: Record<string, unknown>, image: Buffer): Buffer {
  const json = Buffer.from(JSON.stringify(meta));
  const head = Buffer.alloc(8);
  head.writeUInt32BE(4, 0);
  head.writeUInt32BE(json.length, 4);
  return Buffer.concat([head, json, image]);
}

/** A type-3 text frame: type, node id length, node id, text. */
export function textFrame(nodeId: string, text: string): Buffer {
  const id = Buffer.from(nodeId);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(3, 0);
  head.writeUInt32BE(id.length, 4);
  return Buffer.concat([head, id, Buffer.from(text)]);
}
