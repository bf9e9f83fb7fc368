// The suite's client of the hosted WebSocket (`/ws` on the origin): JSON messages are checked
// against the generated validators, binary frames are decoded per the seed's big-endian layouts.
import WebSocket from "ws";
import { Arrivals } from "./arrivals.ts";
import { validator } from "./contract.ts";
import type { Exchange, Http } from "./http.ts";

/** A decoded binary frame. */
export interface BinaryFrame {
  kind: "binary";
  frameType: number;
  imageType?: number;
  nodeId?: string;
  text?: string;
  metadata?: unknown;
  image?: Uint8Array;
}

/** A JSON text frame. */
export interface JsonMessage {
  kind: "json";
  type: string;
  data: Record<string, unknown>;
}

export type WsMessage = JsonMessage | BinaryFrame;

export interface SocketOptions {
  clientId?: string;
  /** The API key for the `token` query parameter; null sends none; undefined uses the run's token. */
  token?: string | null;
  /** Send `feature_flags` with supports_preview_metadata first (type 4 previews). */
  previewMetadata?: boolean;
  timeoutMs?: number;
}

/** v2 statuses each terminal WebSocket message tells (WS-3). */
const WS_OUTCOMES: Record<string, readonly string[]> = { execution_success: ["succeeded"], execution_error: ["failed"], execution_interrupted: ["canceled"] };

const JPEG = [0xff, 0xd8, 0xff];
const PNG = [0x89, 0x50, 0x4e, 0x47];
const startsWith = (b: Uint8Array, magic: number[]) => magic.every((m, i) => b[i] === m);

/** Decodes one binary frame; returns the frame or a description of what is wrong with it. */
export function decodeFrame(buf: Uint8Array): BinaryFrame | { error: string } | undefined {
  if (buf.byteLength < 8) return { error: `a binary frame of ${buf.byteLength} bytes is shorter than its 8-byte header` };
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const frameType = view.getUint32(0, false);
  const word = view.getUint32(4, false);
  const rest = buf.subarray(8);
  switch (frameType) {
    case 1: {
      if (word !== 1 && word !== 2) return { error: `PREVIEW_IMAGE image_type ${word} is neither 1 (JPEG) nor 2 (PNG)` };
      if (!startsWith(rest, word === 1 ? JPEG : PNG)) return { error: `PREVIEW_IMAGE bytes are not ${word === 1 ? "JPEG" : "PNG"}` };
      return { kind: "binary", frameType, imageType: word, image: rest };
    }
    case 3: {
      if (8 + word > buf.byteLength) return { error: `TEXT node_id_len ${word} runs past the frame` };
      const dec = new TextDecoder("utf-8", { fatal: true });
      try {
        return { kind: "binary", frameType, nodeId: dec.decode(rest.subarray(0, word)), text: dec.decode(rest.subarray(word)) };
      } catch {
        return { error: "TEXT frame is not UTF-8" };
      }
    }
    case 4: {
      if (8 + word > buf.byteLength) return { error: `PREVIEW_IMAGE_WITH_METADATA metadata_len ${word} runs past the frame` };
      let metadata: unknown;
      try {
        metadata = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(rest.subarray(0, word)));
      } catch {
        return { error: "PREVIEW_IMAGE_WITH_METADATA metadata is not UTF-8 JSON" };
      }
      const image = rest.subarray(word);
      if (!startsWith(image, JPEG) && !startsWith(image, PNG)) return { error: "PREVIEW_IMAGE_WITH_METADATA image bytes are neither JPEG nor PNG" };
      return { kind: "binary", frameType, metadata, image };
    }
    case 2:
      return { error: "binary type 2 (unencoded preview) is never sent" };
    default:
      // A small unknown type may be a later addition and is skipped; a huge one is a byte-order bug.
      return frameType > 0xffff ? { error: `binary frame type ${frameType} (0x${frameType.toString(16)}): integers are not big-endian` } : undefined;
  }
}

/** An open hosted WebSocket. */
/** Connections opened so far, to name each in reports. */
let connections = 0;

export class HostedSocket {
  private readonly arrivals = new Arrivals<WsMessage>();

  readonly http: Http;
  readonly url: string;
  private readonly ws: WebSocket;
  /** When the connection was asked for: every message tells of that moment or later. */
  private readonly opened: number;
  private readonly name = `WebSocket connection ${++connections}`;

  private constructor(http: Http, url: string, ws: WebSocket, opened: number) {
    this.http = http;
    this.url = url;
    this.ws = ws;
    this.opened = opened;
    ws.on("message", (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on("close", () => this.arrivals.end());
  }

  /** Every message received so far, in order. */
  get messages(): readonly WsMessage[] {
    return this.arrivals.items;
  }

  /** The socket closed. */
  get closed(): boolean {
    return this.arrivals.ended;
  }

  /** The `/ws` URL on the base URL's origin. */
  static urlFor(http: Http, clientId: string, token: string | null | undefined): string {
    const u = new URL("/ws", http.base.origin);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    u.searchParams.set("clientId", clientId);
    const t = token === undefined ? http.options.token : token;
    if (t) u.searchParams.set("token", t);
    return u.toString();
  }

  /** Connects; a refused upgrade comes back as its HTTP status. */
  static open(http: Http, opts: SocketOptions = {}): Promise<{ socket?: HostedSocket; status?: number }> {
    const url = HostedSocket.urlFor(http, opts.clientId ?? crypto.randomUUID(), opts.token);
    const ms = opts.timeoutMs ?? http.options.timeoutMs;
    const opened = http.timeline.now();
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { handshakeTimeout: ms });
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error(`no WebSocket upgrade at ${url} within ${ms} ms`));
      }, ms);
      ws.once("unexpected-response", (_req, res) => {
        clearTimeout(timer);
        res.resume();
        ws.terminate();
        http.coverage.exchange("GET", url, res.statusCode ?? 0);
        resolve({ status: res.statusCode ?? 0 });
      });
      ws.once("error", (err) => {
        clearTimeout(timer);
        reject(new Error(`WebSocket ${url}: ${err.message}`));
      });
      ws.once("open", () => {
        clearTimeout(timer);
        http.coverage.exchange("GET", url, 101);
        const socket = new HostedSocket(http, url, ws, opened);
        if (opts.previewMetadata) ws.send(JSON.stringify({ type: "feature_flags", data: { supports_preview_metadata: true } }));
        resolve({ socket });
      });
    });
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    let msg: WsMessage | undefined;
    if (isBinary) {
      const frame = decodeFrame(bytes);
      this.http.recorder.evaluated("WS-5");
      if (frame && "error" in frame) this.violate("WS-5", frame.error, `binary ${Buffer.from(bytes.subarray(0, 24)).toString("hex")}…`);
      else if (frame) {
        msg = frame;
        this.http.coverage.binary(frame.frameType);
        const fn = validator("event_ws_binary_preview_metadata");
        if (frame.frameType === 4 && fn)
          this.http.validateBody(fn, { kind: "rule", rule: "WS-5" }, frame.metadata, "WS type 4 metadata", this.pseudo(JSON.stringify(frame.metadata)));
      }
    } else {
      const text = new TextDecoder().decode(bytes);
      this.http.scanSecrets(text, this.pseudo(text), "WebSocket message");
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      const m = json as { type?: unknown; data?: unknown } | undefined;
      if (!m || typeof m !== "object" || typeof m.type !== "string" || !m.data || typeof m.data !== "object") {
        this.violate("WS-2", "a text frame is not a JSON {type, data} object", text);
      } else {
        msg = { kind: "json", type: m.type, data: m.data as Record<string, unknown> };
        this.http.coverage.message("ws", m.type);
        this.record(msg);
        const fn = validator(`event_ws_${m.type}`);
        // Unknown types are skipped, as clients do.
        if (fn) this.http.validateBody(fn, { kind: "ws", type: m.type }, json, `WS ${m.type} message`, this.pseudo(text));
      }
    }
    if (!msg) return;
    this.arrivals.push(msg);
  }

  /** Adds a message about a prompt to its job's timeline, with the outcome it tells. */
  private record(m: JsonMessage): void {
    const id = m.data.prompt_id;
    if (!this.http.recording || typeof id !== "string") return;
    this.http.timeline.add({
      job: id,
      sent: this.opened,
      stream: this.name,
      source: `WS ${m.type}`,
      kind: "outcome",
      family: "ws",
      outcome: WS_OUTCOMES[m.type],
      request: `GET ${this.url} (WebSocket)`,
    });
  }

  private pseudo(text: string): Exchange {
    return {
      method: "GET",
      url: this.url,
      operationId: "hostedWebSocket",
      status: 101,
      headers: new Headers(),
      bytes: new Uint8Array(),
      text,
      json: undefined,
    };
  }

  private violate(rule: string, message: string, text: string): void {
    this.http.recorder.violate({ rule, message, request: `GET ${this.url} (WebSocket)`, excerpt: text.slice(0, 600) }, message);
  }

  /** JSON messages of one job (filtered on data.prompt_id, as clients do). */
  jobMessages(promptId: string): JsonMessage[] {
    return this.messages.filter((m): m is JsonMessage => m.kind === "json" && m.data.prompt_id === promptId);
  }

  /** The first message (received or to come) matching pred, or undefined at the deadline or close. */
  waitFor(pred: (m: WsMessage) => boolean, timeoutMs: number): Promise<WsMessage | undefined> {
    return this.arrivals.waitFor(pred, timeoutMs);
  }

  close(): void {
    this.ws.close();
  }
}
