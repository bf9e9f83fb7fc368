// One ComfyUI instance: its HTTP API, its socket, its cached object_info, the prompts followed
// on it, and the reconcile that makes sure none of them is left running: a prompt that left the
// queue ends from its history entry, one in neither the queue nor the history was forgotten.
import { randomUUID } from "node:crypto";
import type { NodeRegistry } from "../nodes/registry.ts";
import { registryOf } from "./definitions.ts";
import { ComfyHttp, ComfyHttpError, type HistoryEntry, type HttpTimeouts } from "./http-api.ts";
import { decodeBinary, outcomeOf, promptIdOf, type ComfyMessage } from "./messages.ts";
import { OutputFolder, type OutputFolderSetting } from "./output-folder.ts";
import type { PromptRun } from "./prompt-run.ts";
import { ComfySocket, type SocketTimings } from "./socket.ts";
import { UploadCache } from "./uploads.ts";

/** Settings of an instance, in ms. */
export interface InstanceTimings extends SocketTimings {
  /** Interval of the reconcile of prompts in flight against /queue and /history. */
  pollIntervalMs: number;
  /** object_info is refetched when older than this. */
  objectInfoTtlMs: number;
  /** Prompts in flight fail with worker_lost after the instance was unreachable this long. */
  lostAfterMs: number;
  /** A prompt that has not started goes to another reachable instance after this one was unreachable this long. */
  reassignAfterMs: number;
  /** Time limit of the load probe (GET /prompt). */
  probeTimeoutMs: number;
  http: Partial<HttpTimeouts>;
}

/** Messages for prompts not (yet) followed are kept this long: POST /prompt may answer after they arrive. */
const EARLY_MESSAGE_MS = 60_000;
const EARLY_MESSAGE_LIMIT = 2000;

/** Where an instance holds a prompt: waiting (with the work ahead of it), running, or finished with its history entry. */
export type HeldPrompt = { state: "pending"; ahead: number } | { state: "running" } | { state: "finished"; entry: HistoryEntry };

/** One ComfyUI instance. */
export class Instance {
  readonly http: ComfyHttp;
  /** The client id of this proxy on the instance, kept across reconnects. */
  readonly clientId = randomUUID();
  readonly uploads = new UploadCache();
  /** Where its output files are read from (its folder beside us, or /view). */
  readonly outputs: OutputFolder;
  /** Prompts chosen for this instance but not yet accepted by it. */
  reserved = 0;
  /** Whether another instance of the pool answers now (set by the pool): prompts may move there. */
  othersReachable: () => boolean = () => false;
  /** Reconnections of the socket (metrics). */
  reconnects = 0;
  /** queue_remaining (running and pending prompts) at the last probe or `status` message. */
  load = 0;
  /** A `status` message came on the connection open now: `load` is current (ComfyUI sends one on every queue change). */
  private loadLive = false;
  /** Counts socket connections; a run whose messages all came on one connection missed none. */
  private epoch = 0;
  private readonly socket: ComfySocket;
  private readonly runs = new Map<string, PromptRun>();
  /** What arrived for a prompt before it was followed (ComfyUI may speak before POST /prompt answers), in arrival order. */
  private early: { promptId: string; deliver: (run: PromptRun, replayed: boolean) => void; at: number }[] = [];
  /** The prompt executing now, for messages and frames that do not name one. */
  private currentPrompt: string | null = null;
  private info: { doc: Record<string, unknown>; at: number; registry: NodeRegistry } | null = null;
  private infoLoading: Promise<Record<string, unknown>> | null = null;
  private unreachableSince: number | null = null;
  private reconciling = false;
  /** Prompts given up here while it was unreachable and submitted elsewhere: deleted from its queue when it is back. */
  private readonly abandoned = new Set<string>();
  private readonly timer: NodeJS.Timeout;

  private readonly timings: InstanceTimings;

  constructor(url: string, timings: InstanceTimings, outputFolder: OutputFolderSetting = "auto") {
    this.timings = timings;
    this.http = new ComfyHttp(url, timings.http);
    this.outputs = new OutputFolder(outputFolder, this.http);
    this.socket = new ComfySocket(
      this.http.socketUrl(this.clientId),
      {
        onOpen: (reconnected, afterOutage) => this.onOpen(reconnected, afterOutage),
        onClose: () => {
          this.unreachableSince ??= Date.now();
          this.currentPrompt = null;
          this.loadLive = false;
        },
        onJson: (m) => this.onMessage(m),
        onBinary: (f) => this.onBinary(f),
      },
      timings,
    );
    this.timer = setInterval(() => void this.reconcile(), timings.pollIntervalMs);
    this.timer.unref();
    this.socket.start();
  }

  /** The base URL, without credentials. */
  get url(): string {
    return this.http.base;
  }

  /** Whether the instance answers now (its socket or its last probe). */
  get reachable(): boolean {
    return this.unreachableSince === null;
  }

  /** Prompts followed now. */
  get active(): number {
    return this.runs.size;
  }

  /** object_info, cached for objectInfoTtlMs; a failed refresh falls back to the last one. */
  async objectInfo(force = false): Promise<Record<string, unknown>> {
    if (this.info && !force && Date.now() - this.info.at < this.timings.objectInfoTtlMs) return this.info.doc;
    this.infoLoading ??= this.http
      .objectInfo()
      .then((doc) => {
        this.info = { doc, at: Date.now(), registry: registryOf([doc]) };
        return doc;
      })
      .finally(() => (this.infoLoading = null));
    try {
      return await this.infoLoading;
    } catch (err) {
      if (this.info) return this.info.doc;
      throw err;
    }
  }

  /** The registry of the last object_info, if any. */
  get registry(): NodeRegistry | null {
    return this.info?.registry ?? null;
  }

  /** Age of the cached object_info in ms (Infinity when none). */
  get infoAge(): number {
    return this.info ? Date.now() - this.info.at : Number.POSITIVE_INFINITY;
  }

  /** The current socket connection, or null while none is open: equal values mean no message was missed between them. */
  get connection(): number | null {
    return this.socket.connected ? this.epoch : null;
  }

  /**
   * How busy the instance is (its queue_remaining), or null when it cannot be reached. While the
   * socket is open, ComfyUI's `status` messages keep the load current and no request is made.
   */
  async probe(): Promise<number | null> {
    if (this.loadLive && this.socket.connected) return this.load;
    try {
      const n = await this.http.queueRemaining(this.timings.probeTimeoutMs);
      this.unreachableSince = null;
      this.load = n;
      this.socket.kick();
      return n;
    } catch (err) {
      // It answered, just not as expected: reachable, load unknown.
      if (err instanceof ComfyHttpError) return this.runs.size;
      this.unreachableSince ??= Date.now();
      return null;
    }
  }

  /**
   * Where the instance holds a prompt now, or null when it never saw it (or forgot it): queue
   * first, then history. Always read at the moment of asking: another flowgate process may have
   * handed it the prompt a moment ago, so no earlier read answers for now.
   */
  async find(promptId: string): Promise<HeldPrompt | null> {
    const q = await this.http.queue();
    if (q.running.includes(promptId)) return { state: "running" };
    const at = q.pending.indexOf(promptId);
    if (at >= 0) return { state: "pending", ahead: q.running.length + at };
    const entry = await this.http.history(promptId);
    return entry ? { state: "finished", entry } : null;
  }

  /**
   * Follows an accepted prompt; messages that arrived before are replayed first. `heardLive`: the
   * run posted the prompt itself, so what came before (while its POST was answered) came as it
   * happened; a prompt adopted heard its earlier messages while nobody followed it.
   */
  follow(run: PromptRun, heardLive: boolean): void {
    this.runs.set(run.promptId, run);
    const mine = this.early.filter((e) => e.promptId === run.promptId);
    this.early = this.early.filter((e) => e.promptId !== run.promptId);
    for (const e of mine) e.deliver(run, !heardLive);
  }

  /** Stops following a prompt. */
  forget(run: PromptRun): void {
    if (this.runs.get(run.promptId) === run) this.runs.delete(run.promptId);
  }

  /** Closes the socket, the reconcile timer and the idle HTTP connections. */
  close(): void {
    clearInterval(this.timer);
    this.socket.close();
    this.http.close();
  }

  /**
   * Settles prompts the socket said nothing about: queue first, then history, so that a prompt
   * finishing between the two reads is found in the history, never taken for lost.
   */
  async reconcile(): Promise<void> {
    if (this.reconciling || this.runs.size === 0) return;
    this.reconciling = true;
    try {
      const startedAt = Date.now();
      let live: Set<string>;
      try {
        const q = await this.http.queue();
        live = new Set([...q.running, ...q.pending]);
        this.unreachableSince = null;
        // Where each prompt stands: running (its execution_start may have been missed), or how much is ahead.
        for (const run of this.runs.values()) {
          if (q.running.includes(run.promptId)) run.push({ kind: "running" });
          const at = q.pending.indexOf(run.promptId);
          if (at >= 0) run.queued(q.running.length + at);
        }
      } catch {
        this.unreachableSince ??= startedAt;
        const down = Date.now() - this.unreachableSince;
        for (const run of [...this.runs.values()]) {
          if (down >= this.timings.lostAfterMs) run.push({ kind: "lost" });
          else if (down >= this.timings.reassignAfterMs && !run.hasStarted && !run.ending && this.othersReachable()) {
            this.abandoned.add(run.promptId);
            run.push({ kind: "reassign" });
          }
        }
        return;
      }
      for (const run of [...this.runs.values()]) {
        if (run.ending || run.acceptedAt >= startedAt || live.has(run.promptId)) continue;
        const entry = await this.http.history(run.promptId).catch(() => undefined);
        if (entry === undefined) continue;
        run.push(entry ? { kind: "history", entry } : { kind: "lost" });
      }
    } finally {
      this.reconciling = false;
    }
  }

  private onOpen(reconnected: boolean, afterOutage: boolean): void {
    this.unreachableSince = null;
    this.epoch++;
    // First contact, or back after an outage (it may have restarted elsewhere): where are its outputs?
    if (!reconnected || afterOutage) {
      void this.outputs.discover();
    }
    if (this.abandoned.size > 0) {
      // Back: prompts that went elsewhere meanwhile must not run here too.
      const ids = [...this.abandoned];
      void this.http.deletePending(ids).then(
        () => {
          for (const id of ids) this.abandoned.delete(id);
        },
        () => undefined,
      );
    }
    if (!reconnected) return;
    this.reconnects++;
    // Messages may have been missed while no socket was open.
    void this.reconcile();
    // A socket closed while idle (the server answered the next attempt at once) keeps the cached
    // definitions and uploads. After an outage it may have restarted: inputs may be gone, nodes
    // may have changed.
    if (!afterOutage) return;
    this.uploads.clear();
    void this.objectInfo(true).catch(() => undefined);
  }

  private onMessage(m: ComfyMessage): void {
    if (m.type === "status") return this.onStatus(m);
    const id = promptIdOf(m) ?? this.currentPrompt;
    if (m.type === "execution_start" && id) this.currentPrompt = id;
    else if (outcomeOf(m) && id === this.currentPrompt) this.currentPrompt = null;
    if (!id) return;
    const run = this.runs.get(id);
    if (run) return run.push({ kind: "message", message: m });
    this.keepEarly(id, (later, replayed) => later.push({ kind: "message", message: m, replayed }));
  }

  private keepEarly(promptId: string, deliver: (run: PromptRun, replayed: boolean) => void): void {
    const now = Date.now();
    this.early = this.early.filter((e) => now - e.at < EARLY_MESSAGE_MS).slice(-EARLY_MESSAGE_LIMIT);
    this.early.push({ promptId, deliver, at: now });
  }

  private onStatus(m: ComfyMessage): void {
    const status = m.data.status as { exec_info?: { queue_remaining?: unknown } } | undefined;
    const n = status?.exec_info?.queue_remaining;
    if (typeof n !== "number" || !Number.isFinite(n)) return;
    this.load = n;
    this.loadLive = true;
  }

  private onBinary(frame: Buffer): void {
    const decoded = decodeBinary(frame);
    if (!decoded) return;
    const id = decoded.kind === "preview" ? (decoded.promptId ?? this.currentPrompt) : this.currentPrompt;
    if (!id) return;
    const deliver = (run: PromptRun) => (decoded.kind === "preview" ? run.preview(decoded) : run.log(decoded));
    const run = this.runs.get(id);
    if (run) deliver(run);
    else this.keepEarly(id, deliver);
  }
}
