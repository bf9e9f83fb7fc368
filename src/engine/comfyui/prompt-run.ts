// One prompt on one ComfyUI instance, from POST /prompt to its confirmed end. Messages are
// handled one at a time in arrival order (each output is committed before the next message);
// the end is taken from the socket and confirmed from GET /history, and a reconcile by the
// instance (missed end, lost prompt) arrives through the same queue.
import sharp from "sharp";
import type { ExecuteOptions, ExecuteResult, OutputSummary, UiDict } from "../engine.ts";
import { EngineError, ExecutionCancelledError, type JobError } from "../errors.ts";
import { isPlainObject } from "../graph.ts";
import type { NodeRegistry } from "../nodes/registry.ts";
import { jobErrorOf } from "./error-mapping.ts";
import { ComfyHttpError, ComfyUnreachableError, type ComfyHttp, type HistoryEntry } from "./http-api.ts";
import { outcomeOf, outcomeOfHistory, timesOfHistory, type BinaryFrame, type ComfyMessage, type Outcome } from "./messages.ts";
import type { OutputFolder } from "./output-folder.ts";
import { materialize, outputKey, outputsOfUi } from "./outputs.ts";

/**
 * What reaches a run: a socket message, what a reconcile found (the prompt running, or its
 * history entry), or word that ComfyUI forgot the prompt.
 */
export type RunEvent =
  /** `replayed`: heard before an adopted run was followed (Instance.follow), so not when it came: a run taken over hears then what its prompt said before. */
  | { kind: "message"; message: ComfyMessage; replayed?: boolean }
  | { kind: "running" }
  | { kind: "history"; entry: HistoryEntry }
  | { kind: "lost" }
  /** Its instance has been unreachable a while and another one answers: a prompt that never started there goes elsewhere. */
  | { kind: "reassign" };

/** The run gave its prompt up on an unreachable instance before it started: the engine submits it elsewhere. */
export class ReassignError extends Error {
  constructor() {
    super("The prompt never started on an unreachable ComfyUI instance.");
    this.name = "ReassignError";
  }
}

/** Timings of a run, in ms. */
export interface RunTimings {
  /** How long to wait for GET /history to show a prompt the socket said had ended. */
  confirmTimeoutMs: number;
  /** How long a canceled prompt may take to stop before the run reports canceled anyway. */
  cancelWaitMs: number;
}

export interface PromptRunOptions {
  http: ComfyHttp;
  graph: Record<string, unknown>;
  registry: NodeRegistry;
  callbacks: ExecuteOptions;
  /** Strings that must never appear in an error (the partner key). */
  secrets: string[];
  timings: RunTimings;
  /** Called once when the run settles. */
  onSettled(run: PromptRun): void;
  /** The instance's socket connection now (null: none open); see Instance.connection. */
  connection(): number | null;
  /** The connection before POST /prompt was sent. */
  connectionAtPost: number | null;
  /** The instance's output folder: files it gives are read there instead of fetched with /view. */
  outputs: OutputFolder;
}

/** A prompt being followed. */
export class PromptRun {
  promptId = "";
  /** When the prompt was accepted (a reconcile only judges prompts accepted before its queue read). */
  acceptedAt = Number.POSITIVE_INFINITY;
  /** An end is being confirmed or was reached. */
  ending = false;
  settled = false;
  readonly result: Promise<ExecuteResult>;
  private resolveResult!: (r: ExecuteResult) => void;
  private rejectResult!: (e: unknown) => void;
  private chain: Promise<void> = Promise.resolve();
  private stopping: "cancel" | "timeout" | null = null;
  private stopTimer: NodeJS.Timeout | null = null;
  private current: string | null = null;
  /** The last `activity` ComfyUI gave each node (null: none). */
  private readonly activities = new Map<string, string | null>();
  /** ComfyUI started the prompt (onRunning was called). */
  private running = false;
  /** Its execution_start came over the socket: this process saw the start live. */
  private startSeen = false;
  private readonly started = new Set<string>();
  private readonly done = new Set<string>();
  private readonly cached = new Set<string>();
  private readonly reported = new Set<string>();
  private readonly delivered = new Set<string>();
  private readonly executedOrder: string[] = [];
  private readonly outputs: OutputSummary[] = [];
  private readonly ui: Record<string, UiDict> = {};

  private readonly o: PromptRunOptions;

  constructor(o: PromptRunOptions) {
    this.o = o;
    this.result = new Promise<ExecuteResult>((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    // The engine awaits result; a rejection before that must not count as unhandled.
    this.result.catch(() => undefined);
  }

  /** ComfyUI started the prompt (it cannot go to another instance any more). */
  get hasStarted(): boolean {
    return this.running;
  }

  /** The prompt was accepted under this id. */
  accepted(promptId: string): void {
    this.promptId = promptId;
    this.acceptedAt = Date.now();
  }

  /** Work ahead of the prompt in ComfyUI's queue, while it waits there. */
  queued(ahead: number): void {
    if (this.running || this.settled || this.stopping) return;
    void Promise.resolve()
      .then(() => this.o.callbacks.onQueued?.(ahead))
      .catch(() => undefined);
  }

  /** Queues an event; events are handled one at a time, in order. */
  push(event: RunEvent): void {
    if (this.settled) return;
    this.chain = this.chain.then(() => (this.settled ? undefined : this.handle(event))).catch((err) => this.failWith(err));
  }

  /** A preview frame for this prompt (best effort: failures are ignored). */
  preview(frame: Extract<BinaryFrame, { kind: "preview" }>): void {
    if (frame.nodeId) return this.emitPreview(frame.nodeId, frame);
    // A frame without metadata is the node executing now, once the messages before it are handled.
    this.chain = this.chain.then(() => (this.current ? this.emitPreview(this.current, frame) : undefined));
  }

  private emitPreview(node: string, frame: Extract<BinaryFrame, { kind: "preview" }>): void {
    const cb = this.o.callbacks.onPreview;
    if (!cb || this.settled || this.stopping) return;
    const jpeg = frame.contentType === "image/jpeg" ? Promise.resolve(frame.image) : sharp(frame.image).jpeg({ quality: 80 }).toBuffer();
    void jpeg.then((data) => cb({ node_id: node, content_type: "image/jpeg", data })).catch(() => undefined);
  }

  /** Progress text of a node: the run's log, after the messages before it (a frame naming no node is the node executing then). */
  log(frame: Extract<BinaryFrame, { kind: "text" }>): void {
    const cb = this.o.callbacks.onLog;
    if (!cb || this.settled) return;
    this.chain = this.chain.then(() => {
      if (this.settled) return;
      void Promise.resolve()
        .then(() => cb({ node_id: frame.nodeId || this.current || null, text: frame.text }))
        .catch(() => undefined);
    });
  }

  /**
   * Stops the prompt: deleted from the queue while pending, interrupted by its id while running
   * (never a global interrupt). The run settles as canceled (or timed out) only once ComfyUI
   * confirms: the prompt left its queue, or an end message arrived. A ComfyUI that refuses the
   * interrupt (404 on an old version) thus keeps the run stopping until the prompt ends there;
   * after cancelWaitMs it settles anyway (the documented bound).
   */
  async stop(reason: "cancel" | "timeout"): Promise<void> {
    if (this.settled || this.stopping) return;
    this.stopping = reason;
    if (!this.promptId) return; // not accepted yet; the engine calls stop again once it is
    this.stopTimer = setTimeout(() => this.settleStopped(), this.o.timings.cancelWaitMs);
    this.stopTimer.unref();
    const { http } = this.o;
    const id = this.promptId;
    let interrupted = false;
    /** The stop found the prompt in the queue: its leaving it is the stop's doing (or a cancel ComfyUI ignored). */
    let seen = false;
    for (let wait = 10; !this.settled; wait = Math.min(wait * 2, 500)) {
      const q = await http.queue().catch(() => null); // unreachable: the reconcile's lostAfterMs still applies
      if (q && (q.pending.includes(id) || q.running.includes(id))) seen = true;
      if (q?.pending.includes(id)) {
        await http.deletePending([id]).catch(() => undefined);
        continue; // read again: it may have started between the read and the delete
      }
      if (q?.running.includes(id)) {
        if (!interrupted) {
          interrupted = true;
          await http.interrupt(id).catch(() => undefined);
        }
      } else if (q) {
        // It left the queue (removed, interrupted, or run to its end despite the cancel): canceled.
        // Gone before the stop came, it had finished (a prompt followed by the reconcile, its end
        // not read yet): that end stands.
        const entry = seen ? null : await http.history(id).catch(() => null);
        if (entry && outcomeOfHistory(entry).kind !== "interrupted" && !this.settled) return this.endAfterAll(entry);
        return this.settleStopped();
      }
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** A stop found the prompt finished in ComfyUI before it: the run ends as ComfyUI recorded, its outputs delivered. */
  private endAfterAll(entry: HistoryEntry): void {
    this.stopping = null;
    if (this.stopTimer) clearTimeout(this.stopTimer);
    this.stopTimer = null;
    this.push({ kind: "history", entry });
  }

  /** Stops following the prompt, which goes on in ComfyUI untouched (another process follows it now): the run settles canceled. */
  detach(): void {
    this.settle(() => this.rejectResult(new ExecutionCancelledError(this.current)));
  }

  /** Ends the run with this error (and stops the prompt on ComfyUI, best effort). */
  failWith(err: unknown): void {
    if (this.settled) return;
    if (this.promptId && !this.ending) void this.o.http.interrupt(this.promptId).catch(() => undefined);
    this.settle(() => this.rejectResult(err));
  }

  private async handle(event: RunEvent): Promise<void> {
    // ComfyUI sends a prompt's messages (execution_start first) only once its worker took it; a
    // history entry says it ran too (a prompt followed by the reconcile may go from pending to
    // finished between two reads): the job is running before its outputs are recorded.
    if ((event.kind === "message" || event.kind === "running" || event.kind === "history") && !this.running) {
      this.running = true;
      await this.o.callbacks.onRunning?.();
    }
    // A start replayed from before this run followed the prompt (a prompt taken over, started
    // while nobody followed it) was not seen when it happened: ComfyUI's record gives its time.
    if (event.kind === "message" && event.message.type === "execution_start" && !event.replayed) this.startSeen = true;
    if (event.kind === "running") return;
    if (event.kind === "reassign") {
      if (this.running || this.stopping || this.ending) return;
      return this.settle(() => this.rejectResult(new ReassignError()));
    }
    if (event.kind === "lost") {
      if (this.stopping) return this.settleStopped();
      return this.settle(() =>
        this.rejectResult(engineError("worker_lost", "ComfyUI lost this prompt before it finished (the instance restarted or dropped it).")),
      );
    }
    if (event.kind === "history") {
      if (this.ending) return;
      return this.end(outcomeOfHistory(event.entry), event.entry);
    }
    const m = event.message;
    if (this.ending) return;
    const outcome = outcomeOf(m);
    if (outcome) return this.end(outcome, undefined, event.replayed === true);
    if (this.stopping) return; // nothing is reported once a cancel was asked for
    const d = m.data;
    switch (m.type) {
      case "execution_cached": {
        const nodes = Array.isArray(d.nodes) ? d.nodes.map(String) : [];
        for (const n of nodes) this.cached.add(n);
        await this.o.callbacks.onCached?.(nodes);
        return;
      }
      case "executing":
        return this.startNode(this.nodeId(d));
      case "progress": {
        const node = d.node === undefined || d.node === null ? this.current : this.nodeId(d);
        const value = Number(d.value);
        const max = Number(d.max);
        if (node && Number.isFinite(value) && Number.isFinite(max)) {
          void Promise.resolve()
            .then(() => this.o.callbacks.onProgress?.({ node_id: node, value, max }))
            .catch(() => undefined);
        }
        return;
      }
      case "executed":
        return this.nodeExecuted(this.nodeId(d), isPlainObject(d.output) ? d.output : {});
      case "progress_state":
        return this.activityOf(d);
      default:
        return; // execution_start, status...: nothing to map
    }
  }

  /**
   * Passes on a change of a running node's `activity` in ComfyUI's progress_state (newer ComfyUIs
   * send it; the state of a node comes before its `executing`, so any running node of the graph counts).
   */
  private activityOf(d: Record<string, unknown>): void {
    if (!isPlainObject(d.nodes)) return;
    for (const [node, entry] of Object.entries(d.nodes)) {
      if (!isPlainObject(entry) || entry.state !== "running" || !Object.hasOwn(this.o.graph, node)) continue;
      const activity = typeof entry.activity === "string" ? entry.activity : null;
      if (activity === (this.activities.get(node) ?? null)) continue;
      this.activities.set(node, activity);
      void Promise.resolve()
        .then(() => this.o.callbacks.onActivity?.({ node_id: node, activity }))
        .catch(() => undefined);
    }
  }

  /** The graph's id for a message's node: expanded nodes report their display node. */
  private nodeId(d: Record<string, unknown>): string {
    const node = String(d.node);
    if (node in this.o.graph || d.display_node === undefined || d.display_node === null) return node;
    return String(d.display_node);
  }

  private classOf(nodeId: string): string {
    const node = this.o.graph[nodeId];
    return isPlainObject(node) && typeof node.class_type === "string" ? node.class_type : "";
  }

  private async startNode(id: string): Promise<void> {
    if (this.current === id) return;
    if (this.current !== null) await this.finishNode(this.current, null);
    this.current = id;
    this.started.add(id);
    await this.o.callbacks.onNodeStart?.({ node_id: id, class_type: this.classOf(id) });
  }

  private async finishNode(id: string, ui: UiDict | null): Promise<void> {
    if (this.current === id) this.current = null;
    if (this.done.has(id)) return;
    this.done.add(id);
    const cached = this.cached.has(id) && !this.started.has(id);
    if (!cached) this.executedOrder.push(id);
    await this.o.callbacks.onNodeDone?.({ node_id: id, class_type: this.classOf(id), ui, cached });
  }

  private async nodeExecuted(id: string, ui: Record<string, unknown>): Promise<void> {
    this.reported.add(id);
    this.ui[id] = ui as UiDict;
    const node = { node_id: id, class_type: this.classOf(id) };
    for (const item of outputsOfUi(ui)) {
      const key = outputKey(id, item);
      if (this.delivered.has(key)) continue;
      this.delivered.add(key);
      const output = await withRetries(() => materialize(this.o.http, node, item, this.o.outputs)).catch((err) => {
        throw engineError(
          "node_execution_error",
          `Could not fetch output ${item.kind === "file" ? item.file.filename : "text"} of node ${id} from ComfyUI.`,
          id,
          node.class_type,
          err,
        );
      });
      if (this.stopping || this.settled) return;
      await this.o.callbacks.onOutput?.(output);
      const { data, ...summary } = output;
      this.outputs.push({ ...summary, size_bytes: data.length });
    }
    await this.finishNode(id, ui as UiDict);
  }

  /** Confirms the end from history, fetches outputs the socket never announced, and settles; `replayed`: its end message came before the run followed the prompt. */
  private async end(said: Outcome, known: HistoryEntry | undefined, replayed = false): Promise<void> {
    this.ending = true;
    // An end seen live on the socket ended then, however long ComfyUI takes to write its history
    // (one replayed from before the run followed the prompt was not seen then).
    const seenAt = known === undefined && !replayed ? Date.now() : undefined;
    const entry = known ?? (this.socketToldAll(said) ? null : await this.confirm());
    if (this.settled) return;
    if (entry) this.reportRecordedTimes(entry, seenAt);
    if (this.stopping) return this.settleStopped();
    let outcome: Outcome = entry ? outcomeOfHistory(entry) : said.kind === "ended" ? { kind: "success" } : said;
    // The socket's error carries the traceback; history may only summarize it.
    if (outcome.kind === "error" && said.kind === "error") outcome = said;
    if (outcome.kind === "success") {
      for (const [id, ui] of Object.entries(entry?.outputs ?? {})) {
        if (!this.reported.has(id) && isPlainObject(ui)) await this.nodeExecuted(id, ui);
      }
      for (const id of [...this.started]) await this.finishNode(id, null);
      const result: ExecuteResult = { executed: this.executedOrder, cached: [...this.cached], outputs: this.outputs, ui: this.ui };
      return this.settle(() => this.resolveResult(result));
    }
    if (outcome.kind === "interrupted") {
      return this.settle(() => this.rejectResult(engineError("node_execution_error", "The prompt was interrupted on the ComfyUI instance.", this.current)));
    }
    const data = (outcome as { data?: Record<string, unknown> }).data ?? {};
    const jobError = jobErrorOf(data, (cls) => this.o.registry.get(cls)?.api_node === true, this.o.secrets);
    return this.settle(() => this.rejectResult(new EngineError(jobError)));
  }

  /**
   * ComfyUI's own times of what this process did not see live: the start unless its
   * execution_start came over the socket, the end when it was learnt from history. An end seen
   * live (`seenAt`) but confirmed from history keeps the time it was seen, not the confirmation's.
   */
  private reportRecordedTimes(entry: HistoryEntry, seenAt: number | undefined): void {
    const { startedAt, endedAt } = timesOfHistory(entry);
    const end = seenAt ?? endedAt;
    const times = {
      ...(!this.startSeen && startedAt !== undefined ? { startedAt } : {}),
      ...(end !== undefined ? { endedAt: end } : {}),
    };
    if (times.startedAt !== undefined || times.endedAt !== undefined) this.o.callbacks.onRecordedTimes?.(times);
  }

  /**
   * A success whose messages all came on one connection, opened before the POST, needs no
   * history: ComfyUI sends `executed` for every output node, cached ones included. A cached
   * output node without its `executed` (an upstream that does not) still sends us to history.
   */
  private socketToldAll(said: Outcome): boolean {
    if (said.kind !== "success" || this.o.connectionAtPost === null || this.o.connection() !== this.o.connectionAtPost) return false;
    return [...this.cached].every((id) => this.reported.has(id) || this.o.registry.get(this.classOf(id))?.output_node !== true);
  }

  /** Polls GET /history until the entry appears; null if it does not in time. */
  private async confirm(): Promise<HistoryEntry | null> {
    const deadline = Date.now() + this.o.timings.confirmTimeoutMs;
    for (let wait = 25; ; wait = Math.min(wait * 2, 1000)) {
      const entry = await this.o.http.history(this.promptId).catch(() => null);
      if (entry || this.settled || Date.now() + wait > deadline) return entry;
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  private settleStopped(): void {
    const err =
      this.stopping === "timeout"
        ? engineError("timeout", "The run took longer than its time limit.", this.current)
        : new ExecutionCancelledError(this.current);
    this.settle(() => this.rejectResult(err));
  }

  private settle(finish: () => void): void {
    if (this.settled) return;
    this.settled = true;
    if (this.stopTimer) clearTimeout(this.stopTimer);
    finish();
    this.o.onSettled(this);
  }
}

function engineError(code: JobError["code"], message: string, nodeId: string | null = null, classType: string | null = null, cause?: unknown): EngineError {
  return new EngineError({ code, message, node_id: nodeId, class_type: classType, traceback: null }, cause === undefined ? undefined : { cause });
}

/** Retries transient failures (unreachable, 5xx) a few times. */
async function withRetries<T>(fn: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      const transient = err instanceof ComfyUnreachableError || (err instanceof ComfyHttpError && err.status >= 500);
      if (!transient || i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 200 * i));
    }
  }
}
