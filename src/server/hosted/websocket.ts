// The hosted WebSocket (/ws): ComfyUI's JSON messages and binary preview frames, fanned out to
// every connection of the job's owner (clientId is ignored). Dead sockets are found by ping;
// a slow reader loses previews first and is dropped before it can grow our memory.
import { STATUS_CODES, type IncomingMessage, type Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { NodeProgressState, WsExecutedData, WsMessage } from "../../../generated/asyncapi-types.ts";
import { HOSTED_ERROR_TYPE_STATUS } from "../../../generated/enums.ts";
import { ServiceError } from "../../domain/errors.ts";
import type { JobEvent } from "../../jobs/event-bus.ts";
import { isTerminalStatus, type JobRecord } from "../../store/index.ts";
import type { Runtime } from "../../runtime/runtime.ts";
import { previewImageFrame, previewWithMetadataFrame, textFrame } from "../../wire/binary-frames.ts";
import { executionError } from "./comfy-shapes.ts";
import { serverFeatures } from "./features.ts";
import { hostedErrorBody } from "./hosted-errors.ts";

/** What progress_state says of one node: its progress, and what it is doing where the engine said. */
interface NodeProgress {
  value: number;
  max: number;
  state: "running" | "finished";
  activity?: string;
}

/** Above this much unsent data a socket gets no previews. */
export const PREVIEW_BACKLOG_BYTES = 2 * 1024 * 1024;
/** Above this much unsent data a socket is closed; the client reconnects and reads history. */
const MAX_BACKLOG_BYTES = 32 * 1024 * 1024;

interface Client {
  ws: WebSocket;
  /** The upgraded connection under ws: corked for the rest of a turn once a frame is sent. */
  socket: Duplex;
  corked: boolean;
  owner: string;
  clientId: string;
  previewMetadata: boolean;
  alive: boolean;
}

/** How long a preview heard before its node's start waits for it. */
const EARLY_PREVIEW_MS = 5_000;

/** Paths the WebSocket is served on. */
export const WS_PATHS = new Set(["/ws", "/api/ws"]);

/** Every hosted WebSocket of the server. */
export class HostedSockets {
  private readonly runtime: Runtime;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  private readonly byOwner = new Map<string, Set<Client>>();
  /** Owners whose `status` message (queue_remaining) goes out at the end of this turn. */
  private readonly statusDue = new Set<string>();
  /** Node currently executing per job, for TEXT frames of its output. */
  private readonly currentNode = new Map<string, { id: string; classType: string }>();
  /**
   * Per job, the newest preview of a node whose `executing` was not sent yet: a run of another
   * process is heard on two paths (previews through Redis, its other events through PostgreSQL),
   * and a client puts a plain preview frame on a node that started.
   */
  private readonly earlyPreview = new Map<string, Extract<JobEvent, { type: "preview" }>>();
  /** Per job, the nodes that started (running or finished), as ComfyUI's progress registry holds them for `progress_state`. */
  private readonly progress = new Map<string, Map<string, NodeProgress>>();
  /** Per job, the nodes that executed (not from cache), in order: `executed` of execution_error and execution_interrupted. */
  private readonly executed = new Map<string, string[]>();
  /** Per owner, the runs whose closing `executing` (no node) is due: ComfyUI sends it after the `status` of the run's end. */
  private readonly endsDue = new Map<string, string[]>();
  /** Per owner with sockets, the queue_remaining it was last told: repeated when a run starts. */
  private readonly lastRemaining = new Map<string, number>();
  private readonly unsubscribe: () => void;
  private readonly pinger: NodeJS.Timeout;

  constructor(runtime: Runtime) {
    this.runtime = runtime;
    // What other processes run for an owner with a socket here counts too (PostgreSQL deployments).
    this.unsubscribe = runtime.events.subscribeAll((e) => this.onEvent(e), { remote: (owner) => this.byOwner.has(owner) });
    this.pinger = setInterval(() => this.ping(), runtime.config.wsPingIntervalMs);
    this.pinger.unref();
  }

  /** Takes over upgrade requests for the WebSocket paths of an HTTP server. */
  attach(server: Server): void {
    server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (!WS_PATHS.has(url.pathname)) return void socket.destroy();
      // The key as `?token=` (ComfyUI's frontend) or an X-API-Key header on the upgrade (SDKs).
      const header = req.headers["x-api-key"];
      const key = url.searchParams.get("token") ?? (typeof header === "string" ? header : null);
      this.runtime.surface.hostedCaller(key).then(
        (caller) => {
          if (!caller.subscription_active) return refuse(socket, "inactive_subscription", "Your subscription is not active.");
          this.wss.handleUpgrade(req, socket, head, (ws) => this.connect(ws, socket, caller.owner, url.searchParams.get("clientId") ?? ""));
        },
        (err) => {
          if (err instanceof ServiceError && err.code === "unauthorized") refuse(socket, "unauthorized", "Invalid or missing API key.");
          else refuse(socket, "internal_error", "Something went wrong on our side. Please try again.");
        },
      );
    });
  }

  /** Open connections (tests, metrics). */
  get size(): number {
    let n = 0;
    for (const set of this.byOwner.values()) n += set.size;
    return n;
  }

  /** Runs whose node states this keeps for `progress_state` (tests: none is kept past its end). */
  get trackedRuns(): number {
    return new Set([...this.currentNode.keys(), ...this.progress.keys(), ...this.executed.keys(), ...this.earlyPreview.keys()]).size;
  }

  /** The largest amount of data queued for one socket, in bytes (metrics, tests). */
  get maxBacklog(): number {
    let max = 0;
    for (const set of this.byOwner.values()) for (const c of set) max = Math.max(max, c.ws.bufferedAmount);
    return max;
  }

  /** Closes every socket. */
  close(): void {
    clearInterval(this.pinger);
    this.unsubscribe();
    for (const set of this.byOwner.values()) for (const c of set) c.ws.terminate();
    this.wss.close();
  }

  private connect(ws: WebSocket, socket: Duplex, owner: string, clientId: string): void {
    const client: Client = { ws, socket, corked: false, owner, clientId, previewMetadata: false, alive: true };
    let set = this.byOwner.get(owner);
    if (!set) this.byOwner.set(owner, (set = new Set()));
    set.add(client);
    // What other processes run for this owner is heard while a socket is open (PostgreSQL deployments).
    const unfollow = this.runtime.events.follow();
    ws.on("pong", () => (client.alive = true));
    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      try {
        const msg = JSON.parse(String(data)) as { type?: unknown; data?: { supports_preview_metadata?: unknown } };
        if (msg.type === "feature_flags") {
          client.previewMetadata = msg.data?.supports_preview_metadata === true;
          this.send(client, { type: "feature_flags", data: serverFeatures(this.runtime) });
        }
      } catch {
        // Clients may send anything; only feature_flags means something here.
      }
    });
    ws.on("close", () => {
      unfollow();
      set.delete(client);
      if (set.size === 0 && this.byOwner.get(owner) === set) {
        this.byOwner.delete(owner);
        this.lastRemaining.delete(owner);
      }
    });
    ws.on("error", () => ws.terminate());
    void this.runtime.queue.liveCount(owner).then(
      (queue_remaining) => {
        if (!this.lastRemaining.has(owner)) this.lastRemaining.set(owner, queue_remaining);
        this.send(client, { type: "status", data: { status: { exec_info: { queue_remaining } }, sid: clientId } });
      },
      () => undefined, // the database is away: the next status carries it
    );
  }

  private ping(): void {
    for (const set of this.byOwner.values()) {
      for (const c of set) {
        if (!c.alive) {
          c.ws.terminate();
          continue;
        }
        c.alive = false;
        c.ws.ping();
      }
    }
  }

  private send(c: Client, message: WsMessage): void {
    this.sendText(c, JSON.stringify(message));
  }

  /** Sends an encoded JSON message, or drops a client that does not read what it is sent. */
  private sendText(c: Client, text: string): void {
    if (c.ws.readyState !== c.ws.OPEN) return;
    if (c.ws.bufferedAmount > MAX_BACKLOG_BYTES) return void c.ws.terminate();
    this.write(c, text);
  }

  /**
   * Sends one frame. The frames of one turn to a socket (a run's burst of events) leave in one
   * write: one system call, and one wake-up of the client instead of one per message.
   */
  private write(c: Client, frame: string | Buffer): void {
    if (!c.corked) {
      c.corked = true;
      c.socket.cork();
      process.nextTick(() => {
        c.corked = false;
        c.socket.uncork();
      });
    }
    c.ws.send(frame);
  }

  private broadcast(owner: string, message: WsMessage): void {
    const set = this.byOwner.get(owner);
    if (!set) return;
    const text = JSON.stringify(message); // once for all of the owner's sockets
    for (const c of set) this.sendText(c, text);
  }

  /**
   * Sends the owner's queue_remaining once the turn ends: the dispatcher's counts settle after the
   * status event (a run leaves its slot after its end is published), and a burst of submissions
   * makes one message.
   */
  private queueStatus(owner: string): void {
    if (this.statusDue.size === 0) setImmediate(() => this.flushStatus());
    this.statusDue.add(owner);
  }

  private flushStatus(): void {
    for (const owner of this.statusDue) {
      const ends = this.endsDue.get(owner) ?? [];
      this.endsDue.delete(owner);
      const sendEnds = () => {
        for (const prompt_id of ends) this.broadcast(owner, { type: "executing", data: { node: null, prompt_id } });
      };
      void this.runtime.queue.liveCount(owner).then((queue_remaining) => {
        if (this.byOwner.has(owner)) this.lastRemaining.set(owner, queue_remaining);
        this.broadcast(owner, { type: "status", data: { status: { exec_info: { queue_remaining } } } });
        sendEnds();
      }, sendEnds);
    }
    this.statusDue.clear();
  }

  /** ComfyUI's `progress_state`: every node of the run that started, with its state, after each change. */
  private progressState(owner: string, jobId: string, nodeId: string, change: NodeProgress): void {
    let nodes = this.progress.get(jobId);
    if (!nodes) this.progress.set(jobId, (nodes = new Map()));
    nodes.set(nodeId, change);
    // Keyed by client node ids, which may be any string: no prototype.
    const data: Record<string, NodeProgressState> = Object.create(null);
    for (const [id, s] of nodes) {
      data[id] = { value: s.value, max: s.max, state: s.state, node_id: id, prompt_id: jobId, display_node_id: id, parent_node_id: null, real_node_id: id };
      if (s.activity !== undefined) data[id].activity = s.activity;
    }
    this.broadcast(owner, { type: "progress_state", data: { prompt_id: jobId, nodes: data } });
  }

  private onEvent(e: JobEvent): void {
    const owner = e.type === "status" ? e.job.owner : e.owner;
    if (!this.byOwner.has(owner)) {
      // Its sockets closed mid-run: what was kept for the run goes with its end.
      if (e.type === "status" && isTerminalStatus(e.job.status)) this.forgetRun(e.job.id);
      return;
    }
    const timestamp = Date.now();
    switch (e.type) {
      case "status":
        return this.onStatus(e.job, timestamp);
      case "cached":
        return this.broadcast(owner, { type: "execution_cached", data: { nodes: e.node_ids, prompt_id: e.job_id, timestamp } });
      case "node_start": {
        this.currentNode.set(e.job_id, { id: e.node_id, classType: e.class_type });
        // ComfyUI's order: the registry's progress_state (the node running), then `executing`; an activity said just before stays.
        const said = this.progress.get(e.job_id)?.get(e.node_id)?.activity;
        this.progressState(owner, e.job_id, e.node_id, { value: 0, max: 1, state: "running", ...(said === undefined ? {} : { activity: said }) });
        this.broadcast(owner, { type: "executing", data: { node: e.node_id, display_node: e.node_id, prompt_id: e.job_id } });
        const early = this.earlyPreview.get(e.job_id);
        if (early?.node_id === e.node_id) {
          this.earlyPreview.delete(e.job_id);
          this.sendPreview(owner, early);
        }
        return;
      }
      case "activity": {
        // As ComfyUI's set_activity: the node's state again, with (or without) what it is doing; no `progress`.
        const prior = this.progress.get(e.job_id)?.get(e.node_id) ?? { value: 0, max: 1, state: "running" as const };
        const { activity: _, ...rest } = prior;
        return this.progressState(owner, e.job_id, e.node_id, e.activity === null ? rest : { ...rest, activity: e.activity });
      }
      case "step": {
        // ComfyUI's order: the registry's progress_state, then `progress`; the node's activity stays until it changes.
        const activity = this.progress.get(e.job_id)?.get(e.node_id)?.activity;
        this.progressState(owner, e.job_id, e.node_id, { value: e.value, max: e.max, state: "running", ...(activity === undefined ? {} : { activity }) });
        return this.broadcast(owner, { type: "progress", data: { value: e.value, max: e.max, prompt_id: e.job_id, node: e.node_id } });
      }
      case "node_done": {
        // The engine's ui object is ComfyUI's node output, passed on as the engine gave it.
        if (e.ui)
          this.broadcast(owner, {
            type: "executed",
            data: { node: e.node_id, display_node: e.node_id, output: e.ui as WsExecutedData["output"], prompt_id: e.job_id },
          });
        const prior = this.progress.get(e.job_id)?.get(e.node_id);
        // A node that started executed; one only reported done was served from cache.
        if (prior?.state === "running") {
          const list = this.executed.get(e.job_id) ?? [];
          list.push(e.node_id);
          this.executed.set(e.job_id, list);
        }
        const max = prior?.max ?? 1;
        return this.progressState(owner, e.job_id, e.node_id, {
          value: max,
          max,
          state: "finished",
          ...(prior?.activity === undefined ? {} : { activity: prior.activity }),
        });
      }
      case "preview":
        return this.sendPreview(owner, e);
      case "log": {
        const frame = textFrame(e.node_id ?? this.currentNode.get(e.job_id)?.id ?? "", e.text);
        for (const c of this.byOwner.get(owner) ?? []) if (c.ws.readyState === c.ws.OPEN) this.write(c, frame);
        return;
      }
      default:
        return;
    }
  }

  private onStatus(job: JobRecord, timestamp: number): void {
    const owner = job.owner;
    const prompt_id = job.id;
    if (job.status === "running") {
      // ComfyUI tells the queue again as its worker takes the prompt (PromptQueue.get), before
      // execution_start: the count is the same (queued and running both count), so the last one
      // told is repeated, unless none was yet.
      const queue_remaining = this.lastRemaining.get(owner);
      if (queue_remaining !== undefined) this.broadcast(owner, { type: "status", data: { status: { exec_info: { queue_remaining } } } });
      this.broadcast(owner, { type: "execution_start", data: { prompt_id, timestamp } });
    } else if (job.status === "succeeded") {
      // ComfyUI's order: the outcome first, then the empty `executing` that ends the run.
      this.broadcast(owner, { type: "execution_success", data: { prompt_id, timestamp } });
    } else if (job.status === "failed") {
      this.broadcast(owner, { type: "execution_error", data: { ...executionError(job, this.executed.get(job.id) ?? []), timestamp } });
    } else if ((job.status === "canceled" || job.status === "expired") && job.started_at !== null) {
      const node = this.currentNode.get(job.id);
      this.broadcast(owner, {
        type: "execution_interrupted",
        data: { prompt_id, node_id: node?.id ?? null, node_type: node?.classType ?? null, executed: this.executed.get(job.id) ?? [], timestamp },
      });
    }
    if (isTerminalStatus(job.status)) {
      // As ComfyUI does after every run, whatever its outcome: the empty `executing` ends it, after
      // the `status` of the queue's change. A prompt deleted (or expired) while pending never ran:
      // ComfyUI sends only `status` for it.
      if (job.started_at !== null) {
        const ends = this.endsDue.get(owner) ?? [];
        ends.push(prompt_id);
        this.endsDue.set(owner, ends);
      }
      this.forgetRun(job.id);
    }
    if (job.status === "queued" || isTerminalStatus(job.status)) this.queueStatus(owner);
  }

  private forgetRun(jobId: string): void {
    this.currentNode.delete(jobId);
    this.earlyPreview.delete(jobId);
    this.progress.delete(jobId);
    this.executed.delete(jobId);
  }

  /** Keeps a preview until its node starts; one of a run that ended meanwhile (encoded late) is let go after EARLY_PREVIEW_MS. */
  private holdPreview(e: Extract<JobEvent, { type: "preview" }>): void {
    this.earlyPreview.set(e.job_id, e);
    setTimeout(() => this.earlyPreview.get(e.job_id) === e && this.earlyPreview.delete(e.job_id), EARLY_PREVIEW_MS).unref();
  }

  private sendPreview(owner: string, e: Extract<JobEvent, { type: "preview" }>): void {
    // As ComfyUI: a preview while its node runs (nodes of parallel branches may run together here).
    // One heard before its node started waits for it; one heard after its node finished, once
    // another node started, is dropped (it took the other path than the node's events).
    const node = this.progress.get(e.job_id)?.get(e.node_id);
    if (node === undefined) return this.holdPreview(e);
    if (node.state === "finished" && this.currentNode.get(e.job_id)?.id !== e.node_id) return;
    let plain: Buffer | null = null;
    let withMeta: Buffer | null = null;
    for (const c of this.byOwner.get(owner) ?? []) {
      if (c.ws.readyState !== c.ws.OPEN || c.ws.bufferedAmount > PREVIEW_BACKLOG_BYTES) continue; // previews go first
      if (c.previewMetadata) {
        withMeta ??= previewWithMetadataFrame(
          { node_id: e.node_id, display_node_id: e.node_id, real_node_id: e.node_id, prompt_id: e.job_id, parent_node_id: null, image_type: e.content_type },
          e.data,
        );
        this.write(c, withMeta);
      } else {
        plain ??= previewImageFrame(e.content_type, e.data);
        this.write(c, plain);
      }
    }
  }
}

/** Answers an upgrade request with a plain HTTP error in the hosted shape, with its type's status. */
function refuse(socket: Duplex, type: keyof typeof HOSTED_ERROR_TYPE_STATUS, message: string): void {
  const status = HOSTED_ERROR_TYPE_STATUS[type];
  const body = JSON.stringify(hostedErrorBody(type, message));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
