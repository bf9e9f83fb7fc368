// The Engine interface every backend implements (the embedded CPU library, and a proxy to real
// ComfyUI instances in comfyui/), and the types of its options, events, outputs and errors.
import type { AssetRef } from "./asset-refs.ts";
import type { OutputType } from "./node-spec.ts";
import type { ObjectInfo } from "./object-info.ts";
import type { ValidationResult } from "./validate.ts";

export type { OutputType } from "./node-spec.ts";

/** ComfyUI's ui dict of one node: {images: [{filename, subfolder, type}], text: [...], ...}. */
export type UiDict = Record<string, unknown[]>;

/** One file output, delivered through onOutput while the run goes on. */
export interface EngineOutput {
  node_id: string;
  class_type: string;
  /** File name, ComfyUI style: "ComfyUI_00001_.png". */
  name: string;
  /** Folder part of the node's filename_prefix ("" when none), as ComfyUI's ui lists it. */
  subfolder: string;
  type: OutputType;
  content_type: string;
  data: Buffer;
  /** "temp" for previews (PreviewImage, PreviewAny, FlowgatePrint): still outputs. */
  folder: "output" | "temp";
}

/** An output as listed in the result of execute(): everything but the bytes. */
export type OutputSummary = Omit<EngineOutput, "data"> & { size_bytes: number };

/** The bytes of a core/ASSET reference, from the job layer. */
export interface ResolvedAsset {
  bytes: Buffer;
  /** "blake3:<hex>": the node's change marker for caching. */
  hash: string;
  content_type: string;
}

/** Resolves a core/ASSET reference (the caller's ownership already checked). */
export type AssetResolver = (ref: AssetRef) => Promise<ResolvedAsset>;

/** Resolves a hosted-upload name; null when the caller has no such upload. */
export type UploadResolver = (name: string) => Promise<{ bytes: Buffer; hash: string } | null>;

/** onStart: what will run, in order, and what is served from cache. */
export interface StartEvent {
  /** Node ids that will execute (output nodes and their ancestors, cached ones excluded), in order. */
  nodes: string[];
  /** Node ids served from cache. */
  cached: string[];
  /** Step counts of nodes with steps, where known before running (literal inputs). */
  steps: Record<string, number>;
}

/** A node event. */
export interface NodeEvent {
  node_id: string;
  class_type: string;
}

/** onNodeDone: the node's ComfyUI ui dict, if it has one. */
export interface NodeDoneEvent extends NodeEvent {
  ui: UiDict | null;
  /** True when re-reported from cache (an output node whose outputs are re-emitted). */
  cached: boolean;
}

/** onProgress: one step of a node with steps. */
export interface ProgressEvent {
  node_id: string;
  value: number;
  max: number;
}

/** onActivity: what a running node spends its time on, as ComfyUI's progress_state says (`loading`...); null once it says nothing. */
export interface ActivityEvent {
  node_id: string;
  activity: string | null;
}

/** onPreview: a JPEG preview from a node with steps. */
export interface PreviewEvent {
  node_id: string;
  content_type: "image/jpeg";
  data: Buffer;
}

/** onLog: text a node wrote; `node_id` the node that wrote it, where the backend says. */
export interface LogEvent {
  node_id: string | null;
  text: string;
}

type MaybePromise = void | Promise<void>;

/** Per-run options of execute(). Lifecycle callbacks are awaited; progress, preview and log are not. */
export interface ExecuteOptions {
  /** Cancels the run at the next node or step boundary; execute() then rejects with ExecutionCancelledError. */
  signal?: AbortSignal;
  /**
   * Stops following a run whose work outlives this process (resumesRuns) without touching it where
   * it runs (another process took it over); execute() then rejects with ExecutionCancelledError.
   * Honoured by backends that resume runs only.
   */
  detach?: AbortSignal;
  /** extra_data of the submission; api_key_vendor_org goes to partner nodes of this run only. */
  extra?: { api_key_vendor_org?: string };
  resolveAsset?: AssetResolver;
  resolveUpload?: UploadResolver;
  /** Fails the run with code "timeout" after this many milliseconds. */
  timeoutMs?: number;
  /** The job's id, when the caller has one: the ComfyUI backend submits it as the prompt_id. */
  runId?: string;
  /**
   * The run started in an earlier process (Engine.resumesRuns): follow or collect what the backend
   * holds under `runId`, and never start it again; the run fails `worker_lost` when it holds nothing.
   */
  resumeOnly?: boolean;
  /**
   * No process has handed this run to a backend before: its id was made by this process as it
   * accepted the job, and this is its first start (one process per queue). A backend that queues
   * work elsewhere (ComfyUI) need not ask whether it holds the run already.
   */
  unsent?: boolean;
  /**
   * Asked right before each hand-over of the run to a backend that queues it elsewhere (ComfyUI's
   * POST /prompt), and once more right after it: whether this process still holds the run (under
   * leases, its lease renewed now). False before: another process took it over; it is not handed
   * over. False after: the backend takes its copy back where it holds another one. Either way
   * execute() rejects with ExecutionCancelledError. Rejects: unknown now (before: asked again;
   * after: taken as held).
   */
  holdsRun?(): Promise<boolean>;
  /**
   * Asked once holdsRun said the run was lost after its hand-over: whether another process holds
   * it now (took it over, and follows or hands over the backend's copy), rather than it ended.
   */
  takenOver?(): Promise<boolean>;
  onStart?(event: StartEvent): MaybePromise;
  /** While the graph waits in a queue of the backend's own (Engine.queuesWork): how much work is ahead of it. */
  onQueued?(ahead: number): MaybePromise;
  /** Once, when the graph starts executing (Engine.queuesWork only), before any node event. */
  onRunning?(): MaybePromise;
  /** Once, before anything runs (possibly with an empty list), as ComfyUI's execution_cached. */
  onCached?(nodes: string[]): MaybePromise;
  onNodeStart?(event: NodeEvent): MaybePromise;
  onNodeDone?(event: NodeDoneEvent): MaybePromise;
  /** Awaited before the run goes on: the caller commits each output durably. */
  onOutput?(output: EngineOutput): MaybePromise;
  onProgress?(event: ProgressEvent): MaybePromise;
  /** Backends that report it (ComfyUI's progress_state `activity`): a change of what the running node is doing. */
  onActivity?(event: ActivityEvent): MaybePromise;
  onPreview?(event: PreviewEvent): MaybePromise;
  /** Standard output of the run, in write order. */
  onLog?(event: LogEvent): MaybePromise;
  /**
   * Once, before the run settles, when the backend recorded when it started or ended and this
   * process did not see that live (a run followed after a takeover or collected): the backend's times win.
   */
  onRecordedTimes?(times: RecordedTimes): void;
}

/** When a backend recorded a run's start and end (epoch ms), each only where this process did not see it live. */
export interface RecordedTimes {
  startedAt?: number;
  endedAt?: number;
}

/** What a finished run reports. */
export interface ExecuteResult {
  /** Nodes that executed, in completion order. */
  executed: string[];
  /** Nodes served from cache. */
  cached: string[];
  /** Every output delivered, cached re-emissions included. */
  outputs: OutputSummary[];
  /** ui dicts by node, as ComfyUI's history "outputs". */
  ui: Record<string, UiDict>;
}

/** A workflow backend: node definitions, validation, execution. */
export interface Engine {
  /** "embedded" or "comfyui". */
  readonly kind: string;
  /**
   * True when execute() first waits in a queue of the backend's own (ComfyUI's): it reports
   * onQueued while waiting and onRunning once the graph starts. Absent: running from the call on.
   */
  readonly queuesWork?: boolean;
  /**
   * True when a run outlives the process that started it (ComfyUI keeps executing its prompt):
   * after a restart, execute() with `resumeOnly` follows it to its real end. Absent: it cannot.
   */
  readonly resumesRuns?: boolean;
  /** ComfyUI's object_info. */
  nodeDefinitions(): Promise<ObjectInfo>;
  /** Every validation error at once, in flowgate's and ComfyUI's shapes. */
  validate(graph: unknown): Promise<ValidationResult>;
  /**
   * Runs a graph. Rejects with EngineError (carrying a JobError) on failure, with
   * ExecutionCancelledError when options.signal aborts, and with a callback's own error
   * when a callback throws.
   */
  execute(graph: unknown, options?: ExecuteOptions): Promise<ExecuteResult>;
  /**
   * Called at submission once a graph validated: rejects with EngineUnavailableError when the
   * backend cannot take work now, EngineBusyError when its queue is at the bound. Absent: always admits.
   */
  admit?(): Promise<void>;
  /** Whether the backend can take work (for /readyz). Absent: always ready. */
  ready?(): Promise<boolean>;
  /** The upstream instances' health (metrics). Absent: no upstream. */
  upstreams?(): { url: string; reachable: boolean; reconnects: number; outputFolder: boolean }[];
  /** Releases connections and timers. */
  close?(): Promise<void>;
}

/** The backend cannot be reached: submissions answer 500 upstream_error. */
export class EngineUnavailableError extends Error {
  constructor(message = "The workflow engine is unreachable") {
    super(message);
    this.name = "EngineUnavailableError";
  }
}

/** The backend's queue is at its bound: submissions answer 429 queue_full. */
export class EngineBusyError extends Error {
  /** Seconds to wait before retrying. */
  readonly retryAfterSeconds: number;

  constructor(retryAfterSeconds: number, message = "The workflow engine's queue is full") {
    super(message);
    this.name = "EngineBusyError";
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
