// One WebSocket to a ComfyUI instance's /ws, kept open: it reconnects with backoff under the
// same client id (ComfyUI addresses a prompt's messages to the client id it was queued with)
// and announces preview metadata support on every connection. The backoff is exponential with
// jitter and is only reset by a connection that stayed open a while: a server that closes idle
// sockets right after they open is not hammered.
import WebSocket from "ws";

/** What the socket reports. */
export interface SocketHandlers {
  /**
   * A connection is open (the first, or one after a loss). `afterOutage`: an attempt to connect
   * failed since the last connection, so the instance was down (it may have restarted).
   */
  onOpen(reconnected: boolean, afterOutage: boolean): void;
  /** The connection dropped; a reconnect is already scheduled. */
  onClose(): void;
  onJson(message: { type: string; data: Record<string, unknown> }): void;
  onBinary(frame: Buffer): void;
}

/** Backoff and liveness settings, in ms. */
export interface SocketTimings {
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** A connection with no pong for this long is dropped and reopened. */
  pingIntervalMs: number;
  /** A connection open this long resets the backoff (default: reconnectMaxMs). */
  stableAfterMs?: number;
  /** Random numbers in [0, 1) for the jitter (tests inject their own). */
  random?: () => number;
  /** Schedules a reconnect (tests inject their own to step through a sequence without waiting). */
  schedule?: (reconnect: () => void, delayMs: number) => void;
}

/**
 * The wait before reconnect attempt `attempt` (0-based): exponential from `min`, capped at
 * `max`, with "equal jitter" (half fixed, half random) so that many proxies do not retry in step.
 */
export function reconnectDelay(attempt: number, min: number, max: number, random: () => number): number {
  const ceiling = Math.min(max, min * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

/** A self-healing WebSocket to one instance. */
export class ComfySocket {
  private ws: WebSocket | null = null;
  private closed = false;
  private opened = false;
  /** Reconnect attempts since the last stable connection. */
  private attempt = 0;
  /** A connection attempt failed since the last open. */
  private outage = false;
  private openedAt = 0;
  private retry: NodeJS.Timeout | null = null;
  private pinger: NodeJS.Timeout | null = null;
  private alive = true;

  private readonly url: string;
  private readonly handlers: SocketHandlers;
  private readonly timings: SocketTimings;

  constructor(url: string, handlers: SocketHandlers, timings: SocketTimings) {
    this.url = url;
    this.handlers = handlers;
    this.timings = timings;
  }

  /** True while a connection is open. */
  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Opens the first connection. */
  start(): void {
    if (!this.ws && !this.closed) this.connect();
  }

  /**
   * The instance answered HTTP again: after an outage, reconnect now rather than at the end of a
   * long backoff. (A socket closed while the server stayed up keeps its wait.)
   */
  kick(): void {
    if (this.closed || this.ws || !this.outage) return;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.connect();
  }

  /** Closes for good. */
  close(): void {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.pinger) clearInterval(this.pinger);
    this.ws?.terminate();
    this.ws = null;
  }

  private connect(): void {
    // No permessage-deflate (ws offers it by default, and ComfyUI's aiohttp takes it): inflating
    // each of a prompt's dozen small messages cost a zlib call on the thread pool and about 2 ms of
    // CPU per prompt, on the path of every message.
    const ws = new WebSocket(this.url, { handshakeTimeout: 10_000, maxPayload: 256 * 1024 * 1024, perMessageDeflate: false });
    this.ws = ws;
    let didOpen = false;
    ws.on("open", () => {
      didOpen = true;
      this.openedAt = Date.now();
      this.alive = true;
      // Must be the first message: ComfyUI then sends previews as type-4 frames with their prompt id.
      ws.send(JSON.stringify({ type: "feature_flags", data: { supports_preview_metadata: true } }));
      const reconnected = this.opened;
      const afterOutage = this.outage;
      this.opened = true;
      this.outage = false;
      this.pinger = setInterval(() => this.ping(ws), this.timings.pingIntervalMs);
      this.pinger.unref();
      this.handlers.onOpen(reconnected, afterOutage);
    });
    ws.on("pong", () => (this.alive = true));
    ws.on("message", (data, isBinary) => {
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      if (isBinary) return this.handlers.onBinary(buf);
      let parsed: unknown;
      try {
        parsed = JSON.parse(buf.toString("utf8"));
      } catch {
        return; // not ComfyUI's JSON; nothing to route
      }
      const m = parsed as { type?: unknown; data?: unknown };
      if (typeof m?.type === "string") {
        this.handlers.onJson({ type: m.type, data: typeof m.data === "object" && m.data !== null ? (m.data as Record<string, unknown>) : {} });
      }
    });
    ws.on("error", () => undefined); // "close" follows and reconnects
    ws.on("close", () => {
      if (this.pinger) clearInterval(this.pinger);
      this.pinger = null;
      if (this.ws === ws) this.ws = null;
      if (this.closed) return;
      if (!didOpen) this.outage = true;
      else if (Date.now() - this.openedAt >= (this.timings.stableAfterMs ?? this.timings.reconnectMaxMs)) this.attempt = 0;
      this.handlers.onClose();
      const { reconnectMinMs: min, reconnectMaxMs: max, random = Math.random, schedule } = this.timings;
      const delay = reconnectDelay(this.attempt++, min, max, random);
      const reconnect = () => {
        this.retry = null;
        if (!this.closed && !this.ws) this.connect();
      };
      if (schedule) return schedule(reconnect, delay);
      this.retry = setTimeout(reconnect, delay);
      this.retry.unref();
    });
  }

  private ping(ws: WebSocket): void {
    if (!this.alive) return void ws.terminate();
    this.alive = false;
    ws.ping();
  }
}
