// Shapes shared by the runner, the checks, the report and the CLI.
import type { Graph } from "./checks/support/workflows.ts";
import type { CoverageIndex } from "./machinery/coverage.ts";

/** The three surfaces the contract is served on. */
export type Surface = "self-hosted" | "cloud" | "serverless";
export const SURFACES: readonly Surface[] = ["self-hosted", "cloud", "serverless"];

/** Everything a run needs; only baseUrl is required. */
export interface ConformanceOptions {
  /** Base URL of the surface, possibly with a mount prefix; `/api/v2/...` is appended to it. */
  baseUrl: string;
  /** Bearer token (v2) and API key (hosted interface); none means anonymous. */
  token?: string;
  /** A second caller's token, for the "another caller's job" checks. */
  otherToken?: string;
  /** A token of a caller who is authenticated but not allowed (403). */
  forbiddenToken?: string;
  /** A token of an account without credits (402, cloud and serverless). */
  noCreditsToken?: string;
  /** Which surface's expectations apply. */
  surface?: Surface;
  /** The target is the public demo deployment (anonymous callers, logs withheld). */
  demo?: boolean;
  /** Base URL of a deployment that is provisioning (429 deployment_not_ready). */
  notReadyUrl?: string;
  /** Base URL of a stopped deployment (422 deployment_stopped). */
  stoppedUrl?: string;
  /**
   * What the surface declares it does not support: features (labels, logs, hosted, jobs) or rule
   * groups and rule IDs; their rules are reported as "not supported (declared)", not run.
   */
  unsupported?: string[];
  /** Rule groups (or rule IDs) to run; all when absent. */
  only?: string[];
  /** Only the static subset: shape checks that need no execution (runs against a mock). */
  static?: boolean;
  /** Graph of a slow job (at least a few seconds, one output). */
  slowWorkflow?: Graph;
  /** Graph with a node that has steps (progress with step/steps, previews). */
  stepsWorkflow?: Graph;
  /** Graph that passes validation and fails while running. */
  failingWorkflow?: Graph;
  /** Seconds the default slow graph waits (FlowgateDelay). */
  slowSeconds?: number;
  /** Submit at most this many slow jobs to reach the queue bound (429 queue_full); 0 skips. */
  fillQueue?: number;
  /** Size of the oversized bodies of the negative checks, in MiB; 0 leaves them out. */
  oversizeMb?: number;
  /** Per-request timeout in milliseconds. */
  requestTimeoutMs?: number;
  /** Per-check timeout in milliseconds. */
  checkTimeoutMs?: number;
  /** How long to wait for a job to reach a state, in milliseconds. */
  jobTimeoutMs?: number;
  /**
   * The end-of-run re-read of every job comes at least this many seconds after the first job the
   * run saw finish (a finished job must not change later); a run shorter than that waits for it.
   */
  rereadAfterSeconds?: number;
  /** How many random sequences the model-based check drives (0: off; default 3). */
  explore?: number;
  /** Seed of the random sequences (default: random, printed with a failure). */
  seed?: number;
  /** Value of the `conformance-run` label on the run's v2 jobs (default: the start time and a random suffix). */
  runLabel?: string;
  /** Called after each check with its result (progress output of the CLI). */
  onResult?: (result: CheckResult) => void;
}

/** One failure inside a check, with what the suite sent and an excerpt of what came back. */
export interface FailureDetail {
  rule: string;
  message: string;
  request?: string;
  excerpt?: string;
}

/** Outcome of one check (or of the automatic validation of one rule). */
export interface CheckResult {
  rule: string;
  group: string;
  title: string;
  /** `unsupported`: the rule belongs to what the surface declared it does not support (--unsupported). */
  status: "passed" | "failed" | "skipped" | "unsupported";
  /** Why it was skipped. */
  reason?: string;
  durationMs: number;
  failures: FailureDetail[];
  /** `auto` for the per-rule result of validating every response seen. */
  kind: "check" | "auto";
  static: boolean;
}

/** Counts of one rule group. */
export interface GroupSummary {
  group: string;
  title: string;
  passed: number;
  failed: number;
  skipped: number;
  unsupported: number;
}

/** What runConformance returns. */
export interface Report {
  baseUrl: string;
  surface: Surface;
  static: boolean;
  startedAt: string;
  durationMs: number;
  /** Whether the hosted interface answered GET /api/object_info. */
  hosted: boolean;
  /** The `conformance-run` label of the run's v2 jobs, or null when the surface takes no labels. */
  runLabel: string | null;
  /** Jobs the run found still in flight at its end and canceled (v2 cancel, or /api/queue delete for hosted prompts). */
  canceledAtEnd: number;
  results: CheckResult[];
  groups: GroupSummary[];
  totals: { passed: number; failed: number; skipped: number; unsupported: number };
  /** What the surface declared it does not support (features, groups or rule IDs), as given. */
  unsupported: string[];
  /** Rule IDs with at least one failure. */
  failedRules: string[];
  /** What of the contract the run reached, computed from the specs, with what it did not and why. */
  coverage?: CoverageIndex;
  ok: boolean;
}
