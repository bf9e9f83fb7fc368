// What the job lifecycle needs from an engine backend (embedded or a ComfyUI proxy). The engine
// knows nothing of jobs; src/jobs adapts to it through this port. The engine's events and
// failures pass through it as the engine reports them: one shape from the backend to the job.
import type { components } from "../../generated/openapi-types.ts";
import type { ComfyExecutionDetails, JobErrorCode } from "../domain/failures.ts";
import type {
  ActivityEvent,
  ComfyValidationError,
  EngineOutput,
  LogEvent,
  NodeDoneEvent,
  NodeEvent,
  PreviewEvent,
  ProgressEvent,
  StartEvent,
} from "../engine/index.ts";

export type { ActivityEvent, LogEvent, NodeDoneEvent, NodeEvent, PreviewEvent, ProgressEvent, StartEvent } from "../engine/index.ts";

/**
 * Outcome of validating a graph; `node_errors` is the spec's NodeErrors of `invalid_workflow`,
 * `comfy` the same errors as ComfyUI's POST /prompt answers them (the hosted interface's).
 */
export type GraphValidation =
  | { ok: true; output_node_ids: string[] }
  | { ok: false; node_errors: components["schemas"]["NodeErrors"]; comfy?: ComfyValidationError | null };

/** A `core/ASSET` reference found in a graph. */
export interface GraphAssetReference {
  node_id: string;
  input: string;
  /** null when the reference object is malformed. */
  id: string | null;
}

/** An execution failure as the job stores it: a known code, and ComfyUI's own fields when it ran there. */
export interface RunFailure {
  code: JobErrorCode;
  message: string;
  node_id?: string | null;
  class_type?: string | null;
  traceback?: string | null;
  comfy?: ComfyExecutionDetails;
}

/** A file a node produced, as the engine delivers it. */
export type RunOutput = EngineOutput;

/** Callbacks and inputs of one run. */
export interface RunOptions {
  /** The job's id: a backend that forwards work (ComfyUI) uses it as the upstream prompt id. */
  jobId: string;
  /** The job was running when an earlier process died (EnginePort.resumesRuns): follow its run to its end, never start it again. */
  resume?: boolean;
  /** No process has handed this job to the backend before (ExecuteOptions.unsent). */
  unsent?: boolean;
  signal: AbortSignal;
  /**
   * Stops following the run and leaves it where the backend runs it (another process took the job
   * over): the run ends as canceled would, its work untouched. Backends whose runs live in this
   * process take it as `signal`.
   */
  detach?: AbortSignal;
  /** Whether this process still holds the run, asked before the backend hands it over (ExecuteOptions.holdsRun). */
  holdsRun?(): Promise<boolean>;
  /** Whether another process holds the run now, asked once it was found lost (ExecuteOptions.takenOver). */
  takenOver?(): Promise<boolean>;
  /** Per-submission secrets (`extra_data`), in memory only. */
  extra: { api_key_vendor_org?: string };
  resolveAsset(ref: { id: string }): Promise<{ bytes: Buffer; hash: string; content_type: string } | null>;
  resolveUpload(name: string): Promise<{ bytes: Buffer; hash: string } | null>;
  /** What will run (`nodes`) and what is served from cache (`cached`). */
  onStart(event: StartEvent): void;
  /** While the run waits in the engine's own queue (EnginePort.queuesWork): work ahead of it there. */
  onQueued(ahead: number): void;
  /** The graph started executing (EnginePort.queuesWork only); what is reported after it is published after the move. */
  onRunning(): void;
  onCached(nodeIds: string[]): void;
  onNodeStart(event: NodeEvent): void;
  onNodeDone(event: NodeDoneEvent): void;
  onProgress(event: ProgressEvent): void;
  /** What the running node is doing, where the backend says (ComfyUI's progress_state `activity`). */
  onActivity?(event: ActivityEvent): void;
  onPreview(event: PreviewEvent): void;
  /**
   * Awaited: the output is durable before the run goes on; with JobRunDeps.endWithOutputs, those of
   * the last output node left are only named then, their bytes stored while the engine finishes
   * and their records written with the run's end (which waits for them).
   */
  onOutput(output: RunOutput): Promise<void>;
  onLog(event: LogEvent): void;
}

/**
 * How a run ended; `times`: when the engine recorded its start and end, where this process did not
 * see them live. A failure with a `cause` is not the workflow's: the engine threw what it did not
 * mean as a job's error (infrastructure), and the job ends upstream_error saying why.
 */
export type RunEnd = ({ kind: "succeeded" } | { kind: "failed"; error: RunFailure; cause?: unknown } | { kind: "canceled" }) & {
  times?: RecordedRunTimes;
};

/** A run's start and end as the engine recorded them (epoch ms): they replace this process's clock. */
export interface RecordedRunTimes {
  started_at?: number;
  completed_at?: number;
}

/** An engine backend as the lifecycle sees it. */
export interface EnginePort {
  /** A UI export (top-level `nodes` and `links` arrays) rather than the API format. */
  isUiFormat(graph: unknown): boolean;
  /** Every `core/ASSET` reference in the graph, malformed ones included. */
  assetReferences(graph: Record<string, unknown>): GraphAssetReference[];
  validate(graph: Record<string, unknown>): Promise<GraphValidation>;
  /**
   * True when a run first waits in a queue of the engine's own: its job stays `queued` until the
   * engine reports onRunning. False: the job is `running` from the start of the run.
   */
  readonly queuesWork: boolean;
  /** True when a run goes on in the engine after this process dies, and a restarted process can follow it to its end (RunOptions.resume). */
  readonly resumesRuns: boolean;
  /** Runs a validated graph; never rejects: the end is reported as a RunEnd. */
  run(graph: Record<string, unknown>, options: RunOptions): Promise<RunEnd>;
  /** Node definitions in ComfyUI's object_info shape. */
  nodeDefinitions(): Promise<components["schemas"]["HostedNodeDefinitions"]>;
  /** Whether the engine can take work. */
  ready(): Promise<boolean>;
  /** The upstream instances' health (metrics); absent or empty for the embedded engine. */
  upstreams?(): UpstreamHealth[];
}

/** One upstream engine instance, as metrics report it. */
export interface UpstreamHealth {
  /** Base URL without credentials (a configured, bounded value). */
  url: string;
  reachable: boolean;
  /** Reconnections of its socket since the server started. */
  reconnects: number;
  /** Its output files are read from its folder on this machine (false: fetched over HTTP). */
  outputFolder: boolean;
}
