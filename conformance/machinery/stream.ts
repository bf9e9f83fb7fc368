// The suite's SSE client: reads a job's event stream, checks every event against the generated
// validators as it arrives, and flags `id:` lines (the stream has no resume cursor).
import { createParser } from "eventsource-parser";
import { Arrivals } from "./arrivals.ts";
import { matchRoute, validator } from "./contract.ts";
import type { Auth, Exchange, Http } from "./http.ts";

/** One server-sent event. */
export interface SseEvent {
  event: string;
  data: string;
  json: unknown;
}

export interface OpenOptions {
  auth?: Auth;
  headers?: Record<string, string>;
  /** How long to wait for the response headers. */
  timeoutMs?: number;
}

/** An open event stream. */
/** Connections opened so far, to name each in reports. */
let connections = 0;

export class EventStream {
  readonly comments: string[] = [];
  readonly ids: string[] = [];
  private readonly arrivals = new Arrivals<SseEvent>();
  private endWaiters: Array<() => void> = [];

  readonly http: Http;
  readonly url: string;
  readonly headers: Headers;
  private readonly ctrl: AbortController;
  /** When the connection was asked for: every event shows the job at that moment or later. */
  private readonly opened: number;
  /** The job the stream is about, from its URL, and how it authenticated (for the timeline). */
  private readonly jobId: string;
  private readonly auth: Auth;
  private readonly name = `SSE connection ${++connections}`;

  private constructor(http: Http, url: string, headers: Headers, ctrl: AbortController, opened: number, auth: Auth) {
    this.http = http;
    this.url = url;
    this.headers = headers;
    this.ctrl = ctrl;
    this.opened = opened;
    this.auth = auth;
    this.jobId = decodeURIComponent(/\/jobs\/([^/]+)\/events$/.exec(new URL(url).pathname)?.[1] ?? "");
  }

  /** Opens a stream; an answer other than 200 comes back as a checked exchange instead. */
  static async open(http: Http, url: string, opts: OpenOptions = {}): Promise<{ stream?: EventStream; ex?: Exchange }> {
    const u = new URL(url);
    const ctrl = new AbortController();
    const ms = opts.timeoutMs ?? http.options.timeoutMs;
    const timer = setTimeout(() => ctrl.abort(new DOMException("timeout", "TimeoutError")), ms);
    const headers = { accept: "text/event-stream", ...http.authHeaders(opts.auth ?? "auto", undefined, u.pathname), ...opts.headers };
    let res: Response;
    const opened = http.timeline.now();
    try {
      res = await fetch(u, { headers, signal: ctrl.signal, redirect: "manual" });
    } catch (err) {
      clearTimeout(timer);
      if (ctrl.signal.aborted) throw new Error(`no answer to GET ${url} (event stream) within ${ms} ms`);
      throw new Error(`GET ${url} failed: ${(err as Error).message}`);
    }
    clearTimeout(timer);
    http.coverage.exchange("GET", url, res.status);
    if (res.status !== 200) {
      const bytes = new Uint8Array(await res.arrayBuffer());
      const text = new TextDecoder().decode(bytes);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      const ex: Exchange = { method: "GET", url, operationId: "streamJobEvents", status: res.status, headers: res.headers, bytes, text, json };
      http.checkExchange(ex, matchRoute("GET", u.pathname, http.basePath), u.pathname);
      return { ex };
    }
    const stream = new EventStream(http, url, res.headers, ctrl, opened, opts.auth ?? "auto");
    const ct = res.headers.get("content-type") ?? "";
    if (!ct.startsWith("text/event-stream")) stream.violate("SSE-1", `content-type is ${JSON.stringify(ct)}, not text/event-stream`, "");
    else http.recorder.evaluated("SSE-1");
    void stream.pump(res.body!);
    return { stream };
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const parser = createParser({
      onEvent: (m) => this.onEvent(m.event ?? "message", m.data),
      onId: (id) => {
        this.ids.push(id);
        this.violate("SSE-1", "the stream carries an id: line (it has no resume cursor)", `id: ${id}`);
      },
      onComment: (c) => this.comments.push(c),
    });
    const reader = body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(decoder.decode(value, { stream: true }));
      }
    } catch {
      // aborted by close(), or the connection dropped: either way the stream has ended
    }
    this.arrivals.end();
    for (const f of this.endWaiters) f();
    this.endWaiters = [];
  }

  private onEvent(name: string, data: string): void {
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      this.violate("SSE-2", `the data of a ${name} event is not JSON`, `event: ${name}\ndata: ${data}`);
    }
    const ev: SseEvent = { event: name, data, json };
    this.http.coverage.message("sse", name);
    this.http.scanSecrets(data, this.pseudo(ev), `event ${name}`);
    const fn = validator(`event_sse_${name}`);
    // Unknown event names are allowed: clients ignore them (additive changes).
    if (fn && json !== undefined) {
      this.http.validateBody(fn, { kind: "sse", event: name }, json, `SSE ${name} event`, this.pseudo(ev));
      if (name === "status") this.http.checkJob(json, "sse", "SSE status event", this.pseudo(ev));
    }
    this.record(name, json);
    this.arrivals.push(ev);
  }

  /** Adds the event to its job's timeline: a status event is a whole job, progress and output events a part. */
  private record(name: string, json: unknown): void {
    if (!this.http.recording || !this.jobId) return;
    const body = json && typeof json === "object" && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
    const base = { job: this.jobId, sent: this.opened, stream: this.name, request: `GET ${this.url} (event stream)`, auth: this.auth, source: `SSE ${name}` };
    if (name === "status" && body) {
      for (const out of Array.isArray(body.outputs) ? body.outputs : [])
        if (out && typeof out === "object") this.http.byteChecks.declare(out as Record<string, unknown>);
      this.http.timeline.add({ ...base, kind: "job", status: typeof body.status === "string" ? body.status : undefined, body });
    } else if (name === "progress") this.http.timeline.add({ ...base, kind: "progress", body: body ?? undefined });
    else if (name === "output" && body) {
      this.http.byteChecks.declare(body);
      this.http.timeline.add({ ...base, kind: "output", body });
    } else this.http.timeline.add({ ...base, kind: "event" });
  }

  /** An exchange-like record of one event, for failure reports. */
  pseudo(ev: SseEvent): Exchange {
    const text = `event: ${ev.event}\ndata: ${ev.data}`;
    return { method: "GET", url: this.url, operationId: "streamJobEvents", status: 200, headers: this.headers, bytes: new Uint8Array(), text, json: ev.json };
  }

  private violate(rule: string, message: string, text: string): void {
    this.http.recorder.violate({ rule, message, request: `GET ${this.url} (event stream)`, excerpt: text.slice(0, 600) }, message);
  }

  /** The first event (already received or still to come) matching pred, or undefined at the end or deadline. */
  waitFor(pred: (e: SseEvent) => boolean, timeoutMs: number): Promise<SseEvent | undefined> {
    return this.arrivals.waitFor(pred, timeoutMs);
  }

  /** Every event received so far, in order. */
  get events(): readonly SseEvent[] {
    return this.arrivals.items;
  }

  /** The stream ended. */
  get ended(): boolean {
    return this.arrivals.ended;
  }

  /** Waits until the server ends the stream; false at the deadline. */
  waitEnd(timeoutMs: number): Promise<boolean> {
    if (this.ended) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), timeoutMs);
      this.endWaiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /** The status values of the status events so far. */
  statuses(): string[] {
    return this.events.filter((e) => e.event === "status").map((e) => String((e.json as { status?: unknown } | undefined)?.status));
  }

  /** Closes the connection from the client side. */
  close(): void {
    this.ctrl.abort();
  }
}
