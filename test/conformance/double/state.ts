// The double's state: options and breakages, accounts, jobs with their queue and dispatcher,
// assets over blobs, idempotency keys, and per-job event fan-out.
import type { Progress } from "../../../src/jobs/progress.ts";
import { createHmac, randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { blake3 } from "hash-wasm";
import { execute, executionOrder, NodeError, type FileOut } from "./engine.ts";

/** One way to break the contract, to prove the suite notices. */
export type Breakage =
  | "omitField" // JOB-1: completed_at missing from every job
  | "logsOnPost" // LOG-5: logs on the 201 job
  | "sseIdLines" // SSE-1: id: lines on the stream
  | "wrongErrorCode" // ERR-2: malformed JSON answered 400 invalid_workflow
  | "retryAfterNotInteger" // ERR-3: Retry-After "1.5"
  | "idemAcceptsDifferentBody" // IDEM-2: a reused key with another workflow makes a new job
  | "idemRace" // IDEM-2: concurrent duplicates all accepted
  | "statusOutsideEnum" // ST-1: running reported as "processing"
  | "brokenSelfLink" // URL-3: urls.self leads nowhere
  | "unprefixedLinks" // URL-2: links without the mount prefix
  | "nullLogs" // LOG-3: logs: null on GET
  | "progressOutOfRange" // PRG-1: value in percent
  | "outputSizeMismatch" // OUT-5: size_bytes one too many
  | "errorOnSucceeded" // JERR-2: error set on a succeeded job
  | "cancelRunningDirect" // CAN-2: cancel of a running job answers canceled at once
  | "queuePositionWhileRunning" // JOB-6: queue_position 0 while running
  | "leakExtraData" // SUB-11: extra_data echoed in the graph read back
  | "serverErrorOnWrongType" // ERR-1: a non-object workflow answered 500
  | "wsLittleEndian" // WS-5: binary frame integers little-endian
  | "sseSkipsRunning" // SSE-2: no status event for the move to running
  | "terminalOutsideEnum" // ST-1: succeeded reported as "completed", forever
  | "noUrlExpiresAt" // OUT-1: outputs without url_expires_at
  | "idemNewJobOnReuse" // IDEM-2, IDEM-7: a reused key runs a second job
  | "locationElsewhere" // LNK-1: a 201's Location names an id that does not exist
  // Breakages of what a field means, each well-formed (issue #46):
  | "metricsInSeconds" // JOB-5: execution_ms counts seconds
  | "queuePositionConstant" // JOB-6: every queued job reports queue_position 0
  | "urlExpiresAtLate" // OUT-5: url_expires_at a day after the signed link's own expiry
  | "etagPerAsset" // AST-3: the content's ETag is the asset id, not the blob's hash
  | "createdNewAlwaysTrue" // AST-4: an upload over bytes the caller had says created_new true
  | "outputExpiresApart" // AST-1: an output's asset record expires an hour after its job, not with it
  | "nonRetryableForEveryFailure" // HOST-5: the hosted status of a job failed with node_execution_error is non_retryable_error
  | "errorForEveryFailure" // HOST-5: the hosted status of a job failed with invalid_input (an upload that is no image, to LoadImage) is error
  | "hostedNotFoundAsInvalid" // HOST-9: hosted 404s carry the error type invalid_request (a 400's)
  | "previewDeclaredPng" // WS-5: a type 4 preview's metadata says image/png over JPEG bytes
  | "previewNamesOtherNode" // WS-5: a type 4 preview names a node of the graph other than the one running
  | "cachedNodesRun" // WS-3: execution_cached lists every node of the graph, which then all run
  | "createdNewAcrossCallers" // AST-4: an upload over bytes only another caller had says 200, created_new false
  // Breakages that only a comparison of two observations shows (the timeline's invariants):
  | "cancelingReadsRunning" // ST-3: GET shows a canceling job (which stays canceling 200 ms) as running
  | "terminalMetricsDrift" // ST-4: GET recomputes a finished job's execution_ms on every read
  | "createdAtOnGet" // JOB-7: GET shows created_at one millisecond earlier than every other view
  | "sseProgressRegresses" // PRG-2: the stream repeats the previous snapshot after each new step of a stepped node
  | "stepPastSteps" // PRG-1: the stream's progress shows step steps+1 at the last step
  | "outputsAtEnd" // JOB-4: a job's views show no output until it ended (its output events still come)
  | "outputsDropOnReread" // JOB-4: GET of a finished job drops its last output from the second read on
  | "sseAfterTerminal" // SSE-2: the stream sends a progress event after the terminal status event
  | "sseTerminalSubset" // SSE-2: the terminal status event carries one output fewer than GET
  | "getHidesProgressWhileStreamed" // GEN-3: GET shows no progress while a stream of the job is open
  | "sseSkipsCanceling" // SSE-2: the stream never pushes the move to canceling
  | "assetRecordTypeDiffers" // AST-1: an output's asset record gives application/octet-stream
  | "listUnprefixed" // URL-2: list entries' links lack the mount prefix
  | "hostedFailedAsSuccess" // HOST-5: the hosted status of a failed job is success
  | "wsSuccessForFailed" // WS-3: a failed job's WebSocket outcome is execution_success
  | "rangeOffByOne" // AST-4: a 206 carries the right number of bytes, one byte further on
  | "contentRangeTotal" // AST-4: a 206's Content-Range gives a total one too many
  | "contentTypeNotBytes" // OUT-5: a PNG output declared (and served) as image/webp
  | "keyInLocation" // HOST-6: /api/view's redirect Location carries the API key
  | "extraDataInHeader" // SUB-11: the 201 of a submission echoes extra_data in a header
  | "idemReleasedOn5xx" // IDEM-5: a keyed submission that answered 500 released its key (with upstreamErrorOnKeyed)
  // Breakages of the labels (contract 2.1, the LBL extension group):
  | "labelBoundTooTight" // LBL-1: 16 labels are refused as metadata_invalid (the double's bound is 15)
  | "metadataInvalidAs400" // LBL-2: a map outside the bounds answers 400 invalid_request
  | "metadataInvalidNoKey" // LBL-2: metadata_invalid without details.key
  | "labelsDroppedOnCancel" // LBL-3: the cancel answer carries metadata {}
  | "labelsMissingOnSse" // LBL-3: SSE status events carry no metadata
  | "filterIgnored" // LBL-4: the listing ignores label filters
  | "filterAnyOf" // LBL-4: a job matching any one of the filters is listed
  | "filterDropsStatus" // LBL-4: a listing filtered by label ignores status
  | "filterMalformedAccepted" // LBL-5: more than 3 filters are accepted
  | "declinedFilterIgnored" // LBL-6 (with labels: false): a filtered listing answers 200 with every job
  | "idemIgnoresLabels" // LBL-7: a reused key with the same workflow and other labels makes a new job
  | "logHeadKept" // LOG-7: a log over the capture bound keeps its head, not its tail
  // Breakages of the hosted routes a run once never called (issue #46):
  | "promptInfoOffByOne" // HOST-7: GET /api/prompt counts one prompt more than /api/queue holds
  | "interruptIgnoresPromptId" // HOST-8: POST /api/interrupt {prompt_id} interrupts every running prompt of the caller
  | "historyDeleteIgnored" // HOST-5: POST /api/history {delete} answers 200 and keeps the entry
  | "historyDeleteEndsJob" // HOST-5: a prompt taken out of the history reads lost on /api/job/{id}/status
  | "textFrameTruncated" // WS-5: a TEXT frame carries the printed text without its first character
  | "contentSkipsAuth" // AUTH-4: the content of an asset without credentials or signature answers 404, not 401
  | "deleteKeepsAsset" // AST-4 (the model-based sequences): DELETE of an upload answers 204 and keeps it
  | "listSkipsFourth" // GET-1 (the model-based sequences): a label-filtered listing leaves out the 4th newest match
  | "nodeInfoOtherClass" // HOST-1: GET /api/object_info/{class} answers the whole list
  // Breakages of the official SDK's listing and logs (contract 2.2, the SDK extension group):
  | "listItemsWithoutUpdateTime" // SDK-1: listed jobs carry no update_time
  | "cursorAsInvalidRequest" // SDK-2: a cursor not issued is 400 invalid_request (reason invalid_cursor)
  | "logsLinkMissing" // SDK-3: jobs link no urls.logs where logs are served
  | "logsOfRunningJob" // SDK-4: the logs resource answers 200 (an empty log) for a job not finished
  | "expiredSoonAfterEnd"; // ST-4: from 2 s after its end, a finished job reads expired (a reaper that does not wait for expires_at)

export interface DoubleOptions {
  surface?: "self-hosted" | "cloud" | "serverless";
  /** Mount prefix of the v2 (and hosted) interface, e.g. /deployment/abc. */
  prefix?: string;
  /** Valid tokens; none means anonymous callers are accepted. */
  tokens?: string[];
  /** Tokens of accounts without credits (402). */
  noCredits?: string[];
  /** Tokens of callers who are not allowed (403). */
  forbidden?: string[];
  /** Public demo deployment: anonymous callers, logs withheld. */
  demo?: boolean;
  /** Extra mounts in a deployment state. */
  deploymentStates?: Record<string, "not_ready" | "stopped">;
  /** Jobs that run at once. */
  slots?: number;
  /** Queued jobs accepted before 429 queue_full. */
  queueBound?: number;
  bodyLimit?: number;
  samplerStepMs?: number;
  keepAliveMs?: number;
  /** Serve the hosted interface (default: not on serverless). */
  hosted?: boolean;
  /** Node classes this surface lacks (a standard node set without the flowgate nodes). */
  missingNodes?: string[];
  /** The first keyed submission answers 500 after claiming its key (an unknown outcome, IDEM-5). */
  upstreamErrorOnKeyed?: boolean;
  /** Accepts labels (default); false declines them with 422 metadata_not_supported (LBL-6). */
  labels?: boolean;
  breaks?: Breakage[];
}

export interface Asset {
  id: string;
  account: string;
  bytes: Uint8Array;
  hash: string;
  contentType: string;
  name: string;
  createdAt: Date;
  jobId: string | null;
  nodeId?: string;
  type?: "image" | "text";
  folder: "output" | "temp" | "input";
}

export type { Progress };

export interface JobRec {
  id: string;
  account: string;
  number: number;
  status: string;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  expiresAt: Date;
  progress: Progress | null;
  outputs: Asset[];
  error: { code: string; message: string; node_id: string | null; class_type: string | null; traceback: null } | null;
  workflow: Record<string, unknown>;
  /** Labels (`metadata`), {} when the submission had none. */
  metadata: Record<string, string>;
  leakedExtra?: unknown;
  log: string;
  /** Output was shed from the log (LOG_LIMIT_BYTES). */
  logTruncated: boolean;
  logAt: Date | null;
  abort: AbortController;
  hostedOutputs: Record<string, { images?: unknown[]; text?: string[] }>;
  events: EventEmitter;
  /** The snapshot before the latest (sseProgressRegresses), GET reads since the end (outputsDropOnReread), open streams. */
  prevProgress?: Progress | null;
  readsSinceEnd: number;
  streams: number;
}

const RETENTION_MS = 7 * 24 * 3600 * 1000;
/** The log capture's bound (the run's output beyond it is shed from the head). */
const LOG_LIMIT_BYTES = 64 * 1024;

/** Everything the double holds. */
export class State {
  readonly o: Required<Omit<DoubleOptions, "breaks" | "deploymentStates">> & {
    breaks: Set<Breakage>;
    deploymentStates: Record<string, "not_ready" | "stopped">;
  };
  readonly jobs = new Map<string, JobRec>();
  /** Finished prompts taken out of the hosted history (POST /api/history). */
  readonly outOfHistory = new Set<string>();
  readonly assets = new Map<string, Asset>();
  readonly keys = new Map<string, string>();
  readonly queue: string[] = [];
  readonly bus = new EventEmitter();
  private running = 0;
  /** upstreamErrorOnKeyed has answered its one 500. */
  failedKeyed = false;
  private number = 0;
  readonly secret = randomUUID();

  constructor(o: DoubleOptions) {
    const surface = o.surface ?? "self-hosted";
    this.o = {
      surface,
      prefix: o.prefix ?? "",
      tokens: o.tokens ?? [],
      noCredits: o.noCredits ?? [],
      forbidden: o.forbidden ?? [],
      demo: o.demo ?? false,
      deploymentStates: o.deploymentStates ?? {},
      slots: o.slots ?? 1,
      queueBound: o.queueBound ?? 1000,
      bodyLimit: o.bodyLimit ?? 1 << 20,
      samplerStepMs: o.samplerStepMs ?? 15,
      keepAliveMs: o.keepAliveMs ?? 200,
      hosted: o.hosted ?? surface !== "serverless",
      missingNodes: o.missingNodes ?? [],
      upstreamErrorOnKeyed: o.upstreamErrorOnKeyed ?? false,
      labels: o.labels ?? true,
      breaks: new Set(o.breaks ?? []),
    };
    this.bus.setMaxListeners(0);
  }

  broken(b: Breakage): boolean {
    return this.o.breaks.has(b);
  }

  /** Appends a run's standard output to its log, keeping the last LOG_LIMIT_BYTES (the first, when logHeadKept). */
  capture(job: JobRec, text: string): void {
    const all = Buffer.from(job.log + text);
    if (all.byteLength <= LOG_LIMIT_BYTES) return void (job.log = all.toString());
    job.logTruncated = true;
    job.log = (this.broken("logHeadKept") ? all.subarray(0, LOG_LIMIT_BYTES) : all.subarray(all.byteLength - LOG_LIMIT_BYTES)).toString();
  }

  /** The account of a token ("anon" when anonymous callers are accepted), or 401/403. */
  account(token: string | undefined): { account: string; noCredits: boolean } | { status: 401 | 403 } {
    if (token && this.o.forbidden.includes(token)) return { status: 403 };
    if (token && this.o.noCredits.includes(token)) return { account: `acct:${token}`, noCredits: true };
    if (token && this.o.tokens.includes(token)) return { account: `acct:${token}`, noCredits: false };
    if (!token && (this.o.tokens.length === 0 || this.o.demo)) return { account: "anon", noCredits: false };
    return { status: 401 };
  }

  /** Stores bytes as an asset. */
  async addAsset(a: Omit<Asset, "id" | "hash" | "createdAt">): Promise<Asset> {
    const asset: Asset = { ...a, id: randomUUID(), hash: `blake3:${await blake3(a.bytes)}`, createdAt: new Date() };
    this.assets.set(asset.id, asset);
    return asset;
  }

  /** HMAC signature of an asset link. */
  sign(id: string, expires: number): string {
    return createHmac("sha256", this.secret).update(`${id}:${expires}`).digest("base64url");
  }

  queuePosition(job: JobRec): number | null {
    const i = this.queue.indexOf(job.id);
    return i >= 0 ? i : null;
  }

  /** Records a new queued job and starts what can start. */
  createJob(account: string, workflow: Record<string, unknown>, extra?: unknown, metadata: Record<string, string> = {}): JobRec {
    const now = new Date();
    const job: JobRec = {
      id: randomUUID(),
      account,
      number: ++this.number,
      status: "queued",
      createdAt: now,
      startedAt: null,
      completedAt: null,
      expiresAt: new Date(now.getTime() + RETENTION_MS),
      progress: null,
      outputs: [],
      error: null,
      workflow,
      metadata,
      leakedExtra: this.broken("leakExtraData") ? extra : undefined,
      log: "",
      logTruncated: false,
      logAt: null,
      abort: new AbortController(),
      hostedOutputs: {},
      events: new EventEmitter(),
      readsSinceEnd: 0,
      streams: 0,
    };
    job.events.setMaxListeners(0);
    this.jobs.set(job.id, job);
    this.queue.push(job.id);
    this.bus.emit("queue", account);
    setImmediate(() => this.dispatch());
    return job;
  }

  private transition(job: JobRec, status: string): void {
    job.status = status;
    job.events.emit("status");
    this.bus.emit("job", job, status);
  }

  /** Cancels a job: queued ends canceled, running goes canceling, terminal is unchanged. */
  cancel(job: JobRec): void {
    if (job.status === "queued") {
      this.queue.splice(this.queue.indexOf(job.id), 1);
      job.completedAt = new Date();
      this.transition(job, "canceled");
      this.bus.emit("queue", job.account);
    } else if (job.status === "running") {
      if (this.broken("cancelingReadsRunning")) setTimeout(() => job.abort.abort(), 200);
      else job.abort.abort();
      if (this.broken("cancelRunningDirect")) {
        job.completedAt = new Date();
        this.transition(job, "canceled");
      } else this.transition(job, "canceling");
    }
  }

  private dispatch(): void {
    while (this.running < this.o.slots && this.queue.length) {
      const job = this.jobs.get(this.queue.shift()!)!;
      this.running++;
      void this.run(job).finally(() => {
        this.running--;
        this.dispatch();
      });
    }
  }

  private async run(job: JobRec): Promise<void> {
    job.startedAt = new Date();
    this.transition(job, "running");
    this.bus.emit("queue", job.account);
    const graph = job.workflow as Parameters<typeof execute>[0];
    let total = 0;
    let done = 0;
    const setProgress = (p: Partial<Progress>) => {
      job.prevProgress = job.progress;
      job.progress = {
        value: 0,
        nodes_done: done,
        nodes_total: total,
        current_node: null,
        current_node_class: null,
        step: null,
        steps: null,
        message: null,
        ...job.progress,
        ...p,
      };
      job.events.emit("progress");
    };
    let current = "";
    try {
      total = executionOrder(graph).length;
      await execute(
        graph,
        {
          signal: job.abort.signal,
          samplerStepMs: this.o.samplerStepMs,
          progress: (step, steps) => {
            setProgress({ value: (done + step / steps) / total, step, steps });
            this.bus.emit("wsProgress", job, current, step, steps);
          },
          preview: (jpeg) => {
            job.events.emit("preview", current, jpeg);
            this.bus.emit("wsPreview", job, current, jpeg);
          },
          log: (text) => {
            this.capture(job, text);
            this.bus.emit("wsText", job, current, text);
          },
          asset: (id) => this.assets.get(id)?.bytes,
          upload: (name) => [...this.assets.values()].find((a) => a.name === name && a.account === job.account && a.folder === "input")?.bytes,
        },
        {
          nodeStart: (id, classType) => {
            current = id;
            setProgress({ value: done / total, nodes_done: done, current_node: id, current_node_class: classType, step: null, steps: null });
            this.bus.emit("wsExecuting", job, id);
          },
          nodeDone: async (id, _classType, files) => {
            done++;
            for (const f of files) await this.commit(job, id, f);
            setProgress({ value: done / total, nodes_done: done });
          },
        },
      );
      setProgress({ value: 1, nodes_done: total, current_node: null, current_node_class: null, step: null, steps: null });
      // A cancel that arrived after the last node still ends the job canceled (canceling -> canceled).
      this.finish(job, job.abort.signal.aborted || job.status === "canceling" ? "canceled" : "succeeded");
    } catch (e) {
      if (e instanceof NodeError && !job.abort.signal.aborted && job.status !== "canceling") {
        job.error = { code: e.code, message: e.message, node_id: e.nodeId, class_type: e.classType, traceback: null };
        this.finish(job, "failed");
      } else this.finish(job, "canceled");
    }
  }

  private async commit(job: JobRec, nodeId: string, f: FileOut): Promise<void> {
    const asset = await this.addAsset({
      account: job.account,
      bytes: f.bytes,
      contentType: f.contentType,
      name: f.name,
      jobId: job.id,
      nodeId,
      type: f.type,
      folder: f.folder,
    });
    job.outputs.push(asset);
    const entry = (job.hostedOutputs[nodeId] ??= {});
    if (f.type === "image") (entry.images ??= []).push({ filename: f.name, subfolder: "", type: f.folder });
    else (entry.text ??= []).push(Buffer.from(f.bytes).toString());
    job.events.emit("output", asset);
    this.bus.emit("wsExecuted", job, nodeId);
  }

  private finish(job: JobRec, status: string): void {
    if (job.status === "canceled") return; // cancelRunningDirect already ended it
    job.completedAt = new Date();
    job.logAt = new Date();
    this.transition(job, status);
    this.bus.emit("queue", job.account);
  }
}
