// The hosted WebSocket (/ws): ComfyUI's JSON messages and binary preview frames, decoded, as an
// async iterator. The `feature_flags` handshake asks for previews with metadata (frame type 4),
// so every preview says which prompt and node it belongs to.
import WebSocket from "ws";
import type { PreviewImageMetadata, WsClientMessage, WsMessage } from "../../generated/asyncapi-types.ts";
import { decodeFrame } from "../wire/binary-frames.ts";

/** One decoded frame: a JSON message, a preview image, or a progress text. */
export type HostedSocketEvent =
  | { kind: "message"; message: WsMessage }
  // image: a Buffer at run time, typed as its base class so that the types need no @types/node.
  | { kind: "preview"; image: Uint8Array; contentType: "image/jpeg" | "image/png"; metadata: PreviewImageMetadata | null }
  | { kind: "text"; nodeId: string; text: string };

export interface HostedSocketOptions {
  /** Sent as `clientId` (ignored by the server; unique for forward compatibility). */
  clientId?: string;
  /** Ask for PREVIEW_IMAGE_WITH_METADATA frames (default true). */
  previewMetadata?: boolean;
}

/** An open hosted WebSocket; iterate it for events, close it when done. */
export class HostedSocket implements AsyncIterable<HostedSocketEvent> {
  private readonly ws: WebSocket;
  private readonly queue: HostedSocketEvent[] = [];
  private readonly waiters = new Set<() => void>();
  private closed = false;
  private failure: Error | null = null;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on("message", (data, isBinary) => this.push(isBinary ? decodeBinary(data as Buffer) : decodeJson(String(data))));
    ws.on("close", () => this.end(null));
    ws.on("error", (err) => this.end(err));
  }

  /** Opens `url` (ws:// or wss://, with `token` and `clientId` in the query) and sends the handshake. */
  static async open(url: string, options: HostedSocketOptions = {}): Promise<HostedSocket> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`WebSocket upgrade refused: HTTP ${res.statusCode}`)));
    });
    const socket = new HostedSocket(ws);
    if (options.previewMetadata !== false) socket.send({ type: "feature_flags", data: { supports_preview_metadata: true } });
    return socket;
  }

  /** Sends a client message. */
  send(message: WsClientMessage): void {
    this.ws.send(JSON.stringify(message));
  }

  /** Closes the connection; iteration ends once buffered events are read. */
  close(): void {
    this.ws.close();
    this.end(null);
  }

  /** The next event; null once the socket is closed and drained; undefined when `timeoutMs` passed first. */
  async next(timeoutMs?: number): Promise<HostedSocketEvent | null | undefined> {
    for (;;) {
      if (this.queue.length > 0) return this.queue.shift()!;
      if (this.failure) throw this.failure;
      if (this.closed) return null;
      const woken = await new Promise<boolean>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        // A waiter that times out leaves without taking an event.
        const timer =
          timeoutMs === undefined
            ? undefined
            : setTimeout(() => {
                this.waiters.delete(wake);
                resolve(false);
              }, timeoutMs);
        this.waiters.add(wake);
      });
      if (!woken) return undefined;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<HostedSocketEvent> {
    for (;;) {
      const event = await this.next();
      if (event === null || event === undefined) return;
      yield event;
    }
  }

  /**
   * The events of one prompt until it ends: `execution_success`, `execution_error` or
   * `execution_interrupted`. An `executing` with no node also marks the end; servers send it
   * before or after the outcome message, so the outcome is awaited a moment (`graceMs`) after it.
   * Previews without metadata and text frames cannot be attributed and are passed through.
   */
  async *follow(promptId: string, options: { graceMs?: number } = {}): AsyncGenerator<HostedSocketEvent> {
    let endMarkerSeen = false;
    for (;;) {
      const event = await this.next(endMarkerSeen ? (options.graceMs ?? 1000) : undefined);
      if (!event) return;
      if (event.kind === "preview" && event.metadata && event.metadata.prompt_id !== promptId) continue;
      if (event.kind !== "message") {
        yield event;
        continue;
      }
      const data = event.message.data as { prompt_id?: unknown; node?: unknown };
      if ("prompt_id" in data && data.prompt_id !== promptId) continue;
      yield event;
      const type = event.message.type;
      if (type === "execution_success" || type === "execution_error" || type === "execution_interrupted") return;
      if (type === "executing" && !data.node) endMarkerSeen = true;
    }
  }

  private push(event: HostedSocketEvent | null): void {
    if (!event) return;
    this.queue.push(event);
    this.wakeUp();
  }

  private end(err: Error | null): void {
    if (this.closed) return;
    this.closed = true;
    this.failure = err;
    this.wakeUp();
  }

  private wakeUp(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }
}

function decodeJson(text: string): HostedSocketEvent | null {
  try {
    const message = JSON.parse(text) as WsMessage;
    return typeof message?.type === "string" ? { kind: "message", message } : null;
  } catch {
    return null; // not JSON: ignored, as unknown frames are
  }
}

function decodeBinary(frame: Buffer): HostedSocketEvent | null {
  let decoded: ReturnType<typeof decodeFrame>;
  try {
    decoded = decodeFrame(frame);
  } catch {
    return null; // an unknown frame type (the interface may grow)
  }
  if (decoded.type === 3) return { kind: "text", nodeId: decoded.nodeId, text: decoded.text };
  if (decoded.type === 1) return { kind: "preview", image: decoded.image, contentType: decoded.imageType === 2 ? "image/png" : "image/jpeg", metadata: null };
  const declared = decoded.metadata.image_type;
  const contentType = declared === "image/png" || (declared === undefined && isPng(decoded.image)) ? "image/png" : "image/jpeg";
  return { kind: "preview", image: decoded.image, contentType, metadata: decoded.metadata as PreviewImageMetadata };
}

function isPng(bytes: Buffer): boolean {
  return bytes.length >= 4 && bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47;
}
