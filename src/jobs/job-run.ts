// One run of one job: engine callbacks become progress, outputs, previews, logs and events.
import type { AssetService, StoredOutput } from "../assets/asset-service.ts";
import {
  LeaseLostError,
  TerminalStatusError,
  type AssetRecord,
  type JobPatch,
  type JobRecord,
  type JobStatus,
  type JsonObject,
  type Notifications,
  type RunFence,
  type Store,
} from "../store/index.ts";
import { UPSTREAM_FAILURE, WORKFLOW_FAILED } from "../domain/failures.ts";
import { isOutOfSpace } from "../datadir/space.ts";
import type { EnginePort, RecordedRunTimes, RunEnd, RunFailure, RunOptions, RunOutput } from "./engine-port.ts";
import type { ReleaseSlot } from "./engine-slots.ts";
import type { EventBus, JobEvent } from "./event-bus.ts";
import { LogCapture } from "./log-capture.ts";
import type { OutputNamer } from "./output-names.ts";
import { OutputRows } from "./output-rows.ts";
import { ProgressTracker, type Progress } from "./progress.ts";

/**
 * Most bytes of one run's last outputs staged or kept inline for its end's commit (BlobStore.stage,
 * up to 256 KiB each; inline, up to 64 KiB each): beyond, outputs are durable before the end as
 * any other, so that one commit stays small.
 */
export const STAGED_BYTES_PER_RUN = 4 * 1024 * 1024;

/**
 * Where other processes hear a run through a relay (PostgreSQL), its progress is written at most
 * this often, the first time this long after the run began: each write is a transaction.
 */
export const RELAYED_PROGRESS_EVERY_MS = 500;

export interface JobRunDeps {
  store: Store;
  assets: AssetService;
  engine: EnginePort;
  events: EventBus;
  now: () => number;
  /** Keep the run's standard output on the job (serverless surfaces). */
  captureLogs: boolean;
  logLimitBytes: number;
  names: OutputNamer;
  /**
   * Writes a run's end or an output record, retrying a failed write until it lands (default: one
   * attempt); gives up at once on a LeaseLostError and where `giveUp` says (a full disk).
   */
  persistEnd?: <T>(write: () => Promise<T>, giveUp?: (err: unknown) => boolean) => Promise<T>;
  /** Where a run says why infrastructure ended or stopped it (the server's standard error). */
  log?: (line: string) => void;
  /**
   * Writes the records of the last output node's outputs in the run's end commit: one durable
   * write instead of two. True: their bytes staged too (BlobStore.stage), their events just
   * before the end's; "inline": small ones' bytes kept in the end's statement for good
   * (NewAsset.inline, up to INLINE_BLOB_MAX_BYTES: no file, no fsync of their own), larger ones
   * durable first, and under a relay the events the run tells from the first held output on ride
   * in the end's statement, before its status. Off by default.
   */
  endWithOutputs?: boolean | "inline";
  /** Waits for a slot of the engine before the graph runs (default: none); the release gives it back. */
  engineSlot?: (signal: AbortSignal) => Promise<ReleaseSlot>;
  /** Called once the engine is done with the run (its outputs stored), before its end is written. */
  engineDone?: () => void;
  /** Spacing of progress writes where a relay carries the run's events (default RELAYED_PROGRESS_EVERY_MS). */
  relayedProgressEveryMs?: number;
}

/** What the dispatcher hears of a run whose job is still `queued` (an engine with its own queue). */
export interface QueuedRunHooks {
  /** Work ahead of the job in the engine's queue. */
  onQueued(ahead: number): void;
  /** The job is `running` now (or ended without a start the engine reported). */
  onRunning(): void;
  /** Whether this process still holds the job, asked right before the engine hands the run over (its lease renewed now). */
  holdsRun?(): Promise<boolean>;
  /** Whether another process holds the job now (took it over), asked once holdsRun said this one lost it. */
  takenOver?(): Promise<boolean>;
  /** No process has handed the job to the engine before (RunOptions.unsent). */
  unsent?: boolean;
}

/**
 * Runs a job to its terminal state. A `running` job runs from now on; a `queued` one (an engine
 * with a queue of its own) moves to `running` when the engine reports that its graph started.
 * `resume`: the job was running when an earlier process died, and the engine follows that run
 * (EnginePort.resumesRuns); outputs it recorded then are not recorded twice. `detach`: stops
 * following the run without touching it in the engine (another process took the job over, or
 * this one stops and hands it over: its end is then not written here).
 * `workflow`: the job's graph, when the caller read it with the job (else the run reads it).
 */
export async function runJob(
  deps: JobRunDeps,
  job: JobRecord,
  extra: { api_key_vendor_org?: string },
  outerSignal: AbortSignal,
  hooks?: QueuedRunHooks,
  fence: RunFence = { workerId: null, epoch: 0 },
  resume = false,
  detach?: AbortSignal,
  workflow?: JsonObject,
): Promise<JobRecord | null> {
  // Within the async function: a failure to set the run up rejects, as a failed run does.
  return new JobRun(deps, job, extra, outerSignal, hooks, fence, resume, detach, workflow).run();
}

/** An event of a run (a status is never relayed: the database tells it). */
type RunEvent = Exclude<JobEvent, { type: "status" }>;

/** A job's node and class, where an output failed. */
type OutputNode = { node_id: string; class_type: string };

/**
 * One run, phase by phase: the engine runs while its callbacks become events, progress and
 * committed outputs (`runEngine`); the end is decided from what failed underneath (`decideEnd`),
 * written with the last outputs (`commitEnd`) and published after everything the run reported
 * (`publishEnd`).
 */
class JobRun {
  private readonly deps: JobRunDeps;
  private readonly job: JobRecord;
  private readonly extra: { api_key_vendor_org?: string };
  private readonly hooks: QueuedRunHooks | undefined;
  private readonly fence: RunFence;
  private readonly base: { job_id: string; owner: string };
  private readonly tracker = new ProgressTracker();
  private readonly log: LogCapture;
  private readonly persist: <T>(write: () => Promise<T>, giveUp?: (err: unknown) => boolean) => Promise<T>;
  /** Aborts the run once one of its writes is refused: it no longer holds its job. */
  private readonly fenced = new AbortController();
  private readonly signal: AbortSignal;
  private readonly detach: AbortSignal | undefined;
  /** Aborted when the run is handed over (its work outlives this process: another one follows it): its end is not written here. */
  private readonly handOff: AbortSignal | undefined;
  private leaseLost = false;
  /** Infrastructure that failed under the run (not the workflow): the job ends upstream_error. */
  private infraFailure: unknown = null;
  /** The end is being written: a snapshot still waiting then finds the job ended, as it should. */
  private ending = false;
  private readonly progressWrites: { write(value: Progress): void; idle(): Promise<void>; settle(): Promise<void> };
  private readonly commits = new Set<Promise<unknown>>();
  /** The last output node's outputs being stored, one after another (see `onOutput`). */
  private lastOutputs: Promise<void> = Promise.resolve();
  /** The output that could not be stored for lack of space, if any: the job fails with `insufficient_storage`. */
  private spaceFailure: OutputNode | null = null;
  /** Engine file name -> the unique name it was committed under, by folder. */
  private readonly renamed = new Map<string, string>();
  /** Records of the last output node's outputs, held to be written with the run's end. */
  private readonly rows: OutputRows;
  /** Output nodes not done yet: once only one is left, its outputs are the run's last. */
  private readonly outputNodesLeft: Set<string>;
  /** Bytes of the last outputs staged so far (see STAGED_BYTES_PER_RUN). */
  private stagedBytes = 0;
  private started: boolean;
  /** The plan, kept back while the job is queued: progress belongs to running jobs. */
  private planned: Progress | null = null;
  /**
   * While the move to `running` or an output's record commits, what the run reports waits behind
   * it, in order, so the `running` status and the output go out first; the engine goes on meanwhile.
   */
  private startCommit: Promise<void> | null = null;
  /** Settles once the move to `running` has committed (or failed): the end commits after it, not after its fsync. */
  private runningCommitted: Promise<void> | null = null;

  /** A resumed run (see runJob): its outputs recorded before the restart, by node and content hash, with their names. */
  private readonly resume: boolean;
  private recordedBefore: Map<string, string> | null = null;
  /** The graph, when the claim read it with the job. */
  private readonly workflow: JsonObject | undefined;
  /**
   * While a success is written with held records under a relay: what the run tells, kept to ride
   * in the end's statement (other processes hear it before the end) and told here after it.
   */
  private collected: RunEvent[] | null = null;

  constructor(
    deps: JobRunDeps,
    job: JobRecord,
    extra: { api_key_vendor_org?: string },
    outerSignal: AbortSignal,
    hooks: QueuedRunHooks | undefined,
    fence: RunFence,
    resume = false,
    detach?: AbortSignal,
    workflow?: JsonObject,
  ) {
    this.resume = resume;
    this.workflow = workflow;
    this.deps = deps;
    this.job = job;
    this.extra = extra;
    this.hooks = hooks;
    this.fence = fence;
    this.base = { job_id: job.id, owner: job.owner };
    this.log = new LogCapture(deps.logLimitBytes);
    this.persist = deps.persistEnd ?? ((write) => write());
    // A refused write stops the run. Under leases, a run whose work outlives this process (ComfyUI's
    // prompt) is detached rather than stopped there: another worker may have adopted the job and
    // follows that prompt now.
    const outlives = deps.engine.resumesRuns && fence.workerId !== null;
    this.signal = outlives ? outerSignal : AbortSignal.any([outerSignal, this.fenced.signal]);
    this.detach = outlives ? AbortSignal.any([...(detach ? [detach] : []), this.fenced.signal]) : detach;
    this.handOff = deps.engine.resumesRuns ? detach : undefined;
    // Progress is fenced with leases only: without, a snapshot may race the move to running (an engine with a queue).
    const progressFence = fence.workerId === null ? undefined : fence;
    // A snapshot's event goes out once its write is stored: a read right after the event (GET, the
    // authoritative view) never shows less (PostgreSQL stores it a round trip after the run reports
    // it). One replaced before its write is never told; one stored once the end is being written
    // is left to the end, which tells the rest.
    // With a relay, the run's events said before a snapshot ride in its write's transaction.
    // Where a relay carries the run's events to other processes, snapshots are written by time (a
    // short run writes none: its end carries its final progress).
    this.progressWrites = latestWins(
      (progress: Progress) =>
        deps.events
          .carry((notify) => deps.store.updateProgress(job.id, progress, progressFence, notify), [], job.id)
          .then(
            (stored) => void (stored && !this.ending && deps.events.publish({ type: "progress", ...this.base, progress })),
            (err: unknown) => {
              if (this.ending && err instanceof LeaseLostError) return;
              if (!this.refused(err)) throw err;
            },
          ),
      deps.events.relays ? (deps.relayedProgressEveryMs ?? RELAYED_PROGRESS_EVERY_MS) : 0,
    );
    this.rows = new OutputRows(deps.assets, undefined, { fence, persist: this.persist });
    this.outputNodesLeft = new Set(job.output_node_ids);
    this.started = job.status !== "queued";
  }

  /** The run from start to end: the job it ended, or null when its end was not written. */
  async run(): Promise<JobRecord | null> {
    const engineEnd = await this.runEngine();
    this.deps.engineDone?.();
    if (engineEnd.kind === "failed" && engineEnd.cause !== undefined && !this.refused(engineEnd.cause)) this.infraFailure ??= engineEnd.cause;
    const end = await this.decideEnd(engineEnd);
    return this.publishEnd(await this.commitEnd(end, engineEnd.times));
  }

  /** True (and the run stopped) when `err` says the run no longer holds its job. */
  private refused(err: unknown): boolean {
    if (!(err instanceof LeaseLostError)) return false;
    if (!this.leaseLost) {
      this.leaseLost = true;
      this.deps.log?.(
        `job ${this.job.id}: a write of its run was refused: the run no longer holds its lease (the job ended elsewhere, or another worker took it over); the run stops and writes nothing more`,
      );
      this.fenced.abort();
    }
    return true;
  }

  /** Tells an event of the run, or keeps it for the end's statement (see `collected`). */
  private emit(event: RunEvent | { type: "status"; job: JobRecord }): void {
    if (this.collected !== null && event.type !== "status" && event.type !== "preview") this.collected.push(event);
    else this.deps.events.publish(event);
  }

  /** Stores a snapshot; its event goes out once it is stored. */
  private report(progress: Progress): void {
    // The end being written carries the final snapshot: a write now would find the job ended.
    if (this.collected !== null) return;
    // Snapshots land in order, and one arriving while a write is under way replaces any older
    // one still waiting: the stored progress catches up at once. Its event follows its write.
    this.progressWrites.write(progress);
  }

  /** What the run reports next waits for `step`. */
  private waitFor(step: Promise<void>): void {
    this.startCommit = step;
    void step.then(() => {
      if (this.startCommit === step) this.startCommit = null;
    });
  }

  /** Publishes after what waits already, in order. */
  private inOrder(publish: () => void): void {
    if (this.startCommit) this.waitFor(this.startCommit.then(publish));
    else publish();
  }

  /** Publishes once `gate` resolves (it never rejects), keeping its place in the order. */
  private inOrderAfter<T>(gate: Promise<T>, publish: (value: T) => void): void {
    this.waitFor((this.startCommit ?? Promise.resolve()).then(() => gate).then(publish));
  }

  /** Moves a queued job to `running` (once), publishing it before what the run reports after. */
  private markRunning(): void {
    if (this.started) return;
    this.started = true;
    const { store } = this.deps;
    let committed!: () => void;
    this.runningCommitted = new Promise<void>((resolve) => (committed = resolve));
    const runningCommit = store
      // With leases the job was claimed while queued: it moves only while this run's claim holds.
      .transitionJob(
        this.job.id,
        ["queued"],
        "running",
        { started_at: this.deps.now() },
        { onCommitted: () => committed(), ...(this.fence.workerId !== null ? { fence: this.fence } : {}) },
      )
      .catch((err: unknown) => (this.refused(err) ? null : ignoreTerminal(err)))
      .then((moved) => {
        this.hooks?.onRunning();
        if (!moved) return; // canceled or expired meanwhile: the run is being stopped
        this.emit({ type: "status", job: moved });
        if (this.planned) this.report(this.planned);
      });
    runningCommit.then(committed, committed);
    this.waitFor(runningCommit);
  }

  /** Runs the graph on the engine; how it ended (a failed graph read ends it failed). */
  private async runEngine(): Promise<RunEnd> {
    try {
      const graph = this.workflow ?? (await this.persist(() => this.deps.store.getJobWorkflow(this.job.id))) ?? {};
      if (this.resume)
        this.recordedBefore = new Map(
          (await this.persist(() => this.deps.store.listJobOutputs(this.job.id))).map((a) => [`${a.node_id}\u0000${a.hash}`, a.name]),
        );
      const release = await this.deps.engineSlot?.(this.signal);
      try {
        return await this.deps.engine.run(graph, this.engineCallbacks());
      } finally {
        release?.();
      }
    } catch (err) {
      // The port promises not to throw, but the graph read can fail (retried until a stop): the job still ends.
      this.infraFailure ??= err;
      return { kind: "failed", error: { ...WORKFLOW_FAILED } };
    }
  }

  /** The engine's callbacks: events, progress, outputs and logs of this run. */
  private engineCallbacks(): RunOptions {
    const { events, assets } = this.deps;
    const { job, base, tracker, rows } = this;
    return {
      jobId: job.id,
      ...(this.resume ? { resume: true } : {}),
      signal: this.signal,
      ...(this.detach ? { detach: this.detach } : {}),
      extra: this.extra,
      ...(this.hooks?.holdsRun ? { holdsRun: this.hooks.holdsRun } : {}),
      ...(this.hooks?.takenOver ? { takenOver: this.hooks.takenOver } : {}),
      ...(this.hooks?.unsent ? { unsent: true } : {}),
      resolveAsset: (ref) => assets.readOwned(job.owner, ref.id),
      resolveUpload: (name) => assets.readUploadByName(job.owner, name),
      onStart: (e) => {
        const plan = tracker.plan([...e.cached, ...e.nodes]);
        if (this.started) this.report(plan);
        else this.planned = plan;
      },
      onQueued: (ahead) => this.hooks?.onQueued(ahead),
      onRunning: () => this.markRunning(),
      onCached: (ids) => {
        for (const id of ids) this.outputNodesLeft.delete(id);
        rows.flush(); // the run goes on: records held so far are written now
        this.inOrder(() => {
          this.emit({ type: "cached", ...base, node_ids: ids });
          this.report(tracker.cached(ids));
        });
      },
      onNodeStart: ({ node_id, class_type }) => {
        rows.flush();
        this.inOrder(() => {
          this.emit({ type: "node_start", ...base, node_id, class_type });
          this.report(tracker.nodeStart(node_id, class_type));
        });
      },
      onNodeDone: ({ node_id, class_type, ui }) => {
        this.outputNodesLeft.delete(node_id);
        const renamedUi = renameInUi(ui, this.renamed);
        this.inOrder(() => {
          this.emit({ type: "node_done", ...base, node_id, class_type, ui: renamedUi });
          this.report(tracker.nodeDone(node_id));
        });
      },
      onProgress: ({ node_id, value, max }) => {
        rows.flush();
        this.inOrder(() => {
          this.emit({ type: "step", ...base, node_id, value, max });
          this.report(tracker.step(node_id, value, max));
        });
      },
      onActivity: ({ node_id, activity }) => this.inOrder(() => this.emit({ type: "activity", ...base, node_id, activity })),
      onPreview: ({ node_id, content_type, data }) => this.inOrder(() => events.publish({ type: "preview", ...base, node_id, content_type, data })),
      onOutput: (output) => track(this.commits, () => this.commitOutput(output)),
      onLog: ({ node_id, text }) => {
        this.log.write(text);
        this.inOrder(() => this.emit({ type: "log", ...base, node_id, text }));
      },
    };
  }

  /**
   * Stores an output under a unique name while the run goes on. Any output but the last output
   * node's is durable with its record before the run goes on. An output of the last output node
   * (but in a resumed run) is named before, and stored after: nothing the engine runs next needs
   * it, so its bytes are written while the engine finishes (in their order, the end waiting for
   * them, see decideEnd: a worker's next run does not wait for their fsyncs), staged with
   * endWithOutputs true, and its record is held for the end's commit. Its event keeps its place
   * among the run's.
   */
  private async commitOutput(output: RunOutput): Promise<void> {
    const { deps, job } = this;
    const name = await this.persist(() => deps.names.reserve(job.owner, output.folder, output.name));
    this.renamed.set(`${output.folder}/${output.name}`, name);
    const last = this.ofLastOutputNode(output);
    // A resumed run's output may be one the process that died recorded, under its own name, which
    // is known only once the bytes are hashed: the node's ui must carry that name, so it waits.
    if (!last || this.recordedBefore !== null) return this.storeOutput(output, name, last, (asset) => this.publishOutput(asset));
    let settle!: (asset: AssetRecord | null) => void;
    this.publishOutput(new Promise<AssetRecord | null>((resolve) => (settle = resolve)));
    let placed = false;
    const place = (asset: Promise<AssetRecord | null>) => {
      placed = true;
      void asset.then(settle, () => settle(null));
    };
    // Stored or not, its place in the order is given up once the store settles (no event without a record).
    const stored = this.lastOutputs.then(() => this.storeOutput(output, name, true, place)).finally(() => placed || settle(null));
    this.lastOutputs = stored.catch(() => undefined);
    void track(this.commits, () => stored).catch(() => undefined);
  }

  /** Stores an output's bytes and writes its record (`last`: held for the end); `publish` places its event. */
  private async storeOutput(output: RunOutput, name: string, last: boolean, publish: (asset: Promise<AssetRecord | null>) => void): Promise<void> {
    const { deps, job } = this;
    const node = { node_id: output.node_id, class_type: output.class_type };
    let asset: Promise<AssetRecord | null>;
    try {
      // An output of the last output node may be staged (its bytes kept by the end's commit
      // until its file is durable: one fsync for all) or kept inline (by the end's statement, for
      // good); any other is durable before its record.
      // (The last outputs are stored one after another: the count is exact.)
      const size = output.data.byteLength;
      const mode = last && this.stagedBytes + size <= STAGED_BYTES_PER_RUN ? deps.endWithOutputs : false;
      const stored = await deps.assets.storeOutput(job, { ...output, name }, { stage: mode === true, inline: mode === "inline" });
      if (stored.pending !== null || stored.record.inline != null) this.stagedBytes += size;
      // Recorded by the process that died: the engine delivers it again, the job keeps the one record.
      const before = this.recordedBefore?.get(`${output.node_id}\u0000${stored.record.hash}`);
      if (before !== undefined) {
        this.renamed.set(`${output.folder}/${output.name}`, before);
        void deps.assets.discardOutputs([stored]);
        return;
      }
      // A record is fenced on a running job: the move to running (which may still be in flight
      // when the engine reports its first output at once) lands first.
      await this.runningCommitted;
      // The record of an output of the last output node waits for the run's end (written
      // in its commit); any other is written now, before the run goes on.
      asset = last ? this.rows.hold(stored, node) : Promise.resolve(await deps.assets.recordOutput(stored, { fence: this.fence, persist: this.persist }));
    } catch (err) {
      if (isOutOfSpace(err)) this.spaceFailure ??= node;
      else if (!this.refused(err)) this.infraFailure ??= err;
      throw err;
    }
    publish(asset);
  }

  /** Tells an output once its record is written (`asset` never rejects), in its place among the run's events. */
  private publishOutput(asset: Promise<AssetRecord | null>): void {
    this.inOrderAfter(asset, (written) => {
      if (written) this.emit({ type: "output", ...this.base, asset: written });
    });
  }

  /** An output of the last output node left, whose record waits for the end's commit (endWithOutputs). */
  private ofLastOutputNode(output: RunOutput): boolean {
    return (this.deps.endWithOutputs ?? false) !== false && [...this.outputNodesLeft].every((id) => id === output.node_id);
  }

  /**
   * Once the engine is done: waits for the move to running and the outputs under way, then turns
   * what failed underneath into the end (no space: insufficient_storage; other infrastructure:
   * upstream_error), never the workflow's failure.
   */
  private async decideEnd(engineEnd: RunEnd): Promise<RunEnd> {
    let end = engineEnd;
    // An end the engine reached without reporting a start (a prompt it refused, a missed message)
    // still passes through `running`: a job only leaves `queued` by running or by a cancel.
    if (end.kind !== "canceled") this.markRunning();
    // The end needs the job moved, not that move durable: when both come in one turn (a ComfyUI
    // that reports a short prompt's start with its end), one fsync makes both durable. Its events
    // still go out after the move's (startCommit).
    await this.runningCommitted;
    // A canceled run can end while an output is still being stored, and the last output node's
    // are stored after the engine is done: each lands before the end state (one may add another).
    while (this.commits.size > 0) await Promise.allSettled([...this.commits]);
    await this.rows.idle();
    // A held record a flush could not write: the run cannot succeed without it.
    const rowFailure = this.rows.failure;
    if (rowFailure !== null && !this.refused(rowFailure.error)) {
      if (isOutOfSpace(rowFailure.error)) end = { kind: "failed", error: outOfSpace(rowFailure.node) };
      else this.infraFailure ??= rowFailure.error;
    }
    // (A last output's bytes are stored after the engine is done: the engine may have succeeded.)
    if (end.kind !== "canceled" && this.spaceFailure !== null) end = { kind: "failed", error: outOfSpace(this.spaceFailure) };
    // What infrastructure ended is never the workflow's failure, and says why where an operator looks.
    else if (this.infraFailure !== null && end.kind !== "canceled") {
      end = { kind: "failed", error: { ...UPSTREAM_FAILURE } };
      this.deps.log?.(`job ${this.job.id}: ends failed upstream_error: ${describe(this.infraFailure)}`);
    }
    if (end.kind !== "succeeded") {
      // Other ends keep the last snapshot, so it lands first, after what the held records hold back.
      this.rows.flush();
      await this.rows.idle();
      await this.startCommit;
      await this.progressWrites.idle();
    } else {
      // A success writes its last records and its final progress with its end, in one commit: a
      // snapshot still waiting is dropped (a later one finds the job no longer running and changes
      // nothing), and one being written lands first, its event before the end's.
      await this.progressWrites.settle();
    }
    return end;
  }

  /**
   * Writes the end (and the logs) with the last outputs' records, retried until it lands; a
   * success whose records do not fit fails as when an output's bytes do not. Null when nothing
   * moved: the job ended elsewhere.
   */
  private async commitEnd(decided: RunEnd, recorded: RecordedRunTimes | undefined): Promise<{ job: JobRecord; assets: AssetRecord[] } | null> {
    const { deps, job, fence } = this;
    const { store } = deps;
    let end = decided;
    const held = this.rows.takeForEnd();

    // Other processes hear the run's events before its end (notifications go in commit order):
    // every event the run reported is handed to the relay first, and those still waiting ride in
    // the end's own transaction, before its status. A success written with held records: what
    // the run told from the first of their outputs on waits behind them (read-your-writes); it
    // is kept now instead (their records as they will be written) to ride in the end's statement.
    if (deps.events.relays) {
      if (held.stored.length > 0 && end.kind === "succeeded") {
        this.collected = [];
        held.release();
      }
      await this.startCommit;
    }

    this.ending = true;
    // A success's final snapshot goes out as progress too (publishEnd); to other processes it goes
    // in the end's own statement, after the run's last events, only if the job moved to succeeded.
    const final: RunEvent[] = end.kind === "succeeded" ? [...(this.collected ?? []), { type: "progress", ...this.base, progress: this.tracker.finish() }] : [];
    // Handed over: the worker that takes the job over follows the run in the engine and writes its end.
    const handedOver = this.handOff?.aborted === true;
    const ended =
      this.leaseLost || handedOver
        ? null
        : await this.persist(() =>
            deps.events.carry(
              async (notify) => {
                if (deps.captureLogs) {
                  const { text, truncated } = this.log.result();
                  await store.setLogs(job.id, { text, truncated, captured_at: deps.now() }, fence);
                }
                // What the engine recorded and this process did not see live (a run taken over or collected) wins over its clock.
                const now = recorded?.completed_at ?? deps.now();
                const times = { completed_at: now, ...(recorded?.started_at !== undefined ? { started_at: recorded.started_at } : {}) };
                if (end.kind === "succeeded") {
                  const progress = this.tracker.finish();
                  try {
                    return await settle(store, job.id, "succeeded", { ...times, progress }, held.stored, fence, notify);
                  } catch (err) {
                    if (!isOutOfSpace(err) || held.stored.length === 0) throw err;
                    // The records do not fit: the job fails as when an output's bytes do not.
                    end = { kind: "failed", error: outOfSpace(held.nodes[0]!) };
                    await held.done(null);
                    held.stored.length = 0;
                  }
                }
                if (end.kind === "failed") return settle(store, job.id, "failed", { ...times, error: { ...end.error } }, [], fence, notify);
                return settle(store, job.id, "canceled", times, [], fence, notify);
              },
              final,
              job.id,
            ),
          ).catch((err: unknown) => {
            if (this.refused(err)) return null;
            throw err;
          });
    // Nothing moved: the job ended elsewhere (or, with leases, is held by no claim of this run).
    // (A job canceled while it was queued, claimed while queued, ended canceled without its run.)
    if (ended === null && !this.leaseLost && !handedOver && fence.workerId !== null && this.started)
      deps.log?.(`job ${job.id}: its end was not written: the run no longer holds its lease (the job ended elsewhere)`);
    if (held.stored.length > 0) await held.done(ended?.assets ?? null);
    // Written with their bytes kept: the store forgets those once the files are durable, off the path.
    if (ended?.assets.length) void deps.assets.settlePending(held.stored).catch(() => undefined);
    return ended;
  }

  /** Publishes the end after everything the run reported before it. */
  private async publishEnd(ended: { job: JobRecord; assets: AssetRecord[] } | null): Promise<JobRecord | null> {
    const finished = ended?.job ?? null;
    // What the run reported before its end goes out before it.
    await this.startCommit;
    const collected = this.collected ?? [];
    this.collected = null;
    // Kept for the end's statement: told here now, once (other processes heard them in it). An end
    // that did not move to succeeded sent them nowhere: the outputs only if their records landed.
    const moved = finished?.status === "succeeded";
    const recorded = (ended?.assets.length ?? 0) > 0;
    for (const event of collected) if (recorded || event.type !== "output") this.deps.events.publish(event, moved);
    // The final snapshot (value 1) goes out as progress too, so streams end on job.progress.
    // (Other processes heard it in the end's statement: see commitEnd.)
    if (finished?.status === "succeeded") this.deps.events.publish({ type: "progress", ...this.base, progress: this.tracker.finish() }, true);
    if (finished) this.deps.events.publish({ type: "status", job: finished });
    return finished;
  }
}

/**
 * Writes the end of a run. A job canceled meanwhile ends `canceled` whatever the run did; one
 * expired by the reaper stays expired (the database refuses to rewrite a terminal state).
 */
async function settle(
  store: Store,
  id: string,
  to: JobStatus,
  patch: JobPatch,
  outputs: readonly StoredOutput[],
  fence: RunFence,
  notify?: Notifications,
): Promise<{ job: JobRecord; assets: AssetRecord[] } | null> {
  const records = outputs.map((s) => s.record);
  const pending = outputs.flatMap((s) => (s.pending === null ? [] : [s.pending]));
  // The run's last events ride in the first move's transaction (sent whether it moves or not);
  // what goes only with a success (its final progress) never with another end.
  let riding =
    notify === undefined || to === "succeeded" ? notify : { channel: notify.channel, payloads: notify.payloads, ...(notify.sent ? { sent: notify.sent } : {}) };
  // Records (and staged bytes) go with whichever move lands, in its transaction; none is written if none does.
  const move = async (from: JobStatus, to: JobStatus, patch: JobPatch) => {
    const notify = riding;
    riding = undefined;
    if (records.length > 0) return store.transitionJobWithAssets(id, [from], to, patch, records, pending, fence, notify);
    const job = await store.transitionJob(id, [from], to, patch, notify === undefined ? { fence } : { fence, notify });
    return job && { job, assets: [] };
  };
  try {
    // A run only stops early because of a cancel request (the job is `canceling`) or the reaper.
    const fromRunning = to === "canceled" ? null : await move("running", to, patch);
    if (fromRunning) return fromRunning;
    // A run that succeeded after a late cancel request ends canceled with its final progress:
    // the stream may already have published it, and the job must not read as less.
    return await move("canceling", "canceled", {
      completed_at: patch.completed_at ?? null,
      ...(patch.started_at !== undefined ? { started_at: patch.started_at } : {}),
      ...(patch.progress ? { progress: patch.progress } : {}),
    });
  } catch (err) {
    if (err instanceof TerminalStatusError) return null;
    throw err;
  }
}

function ignoreTerminal(err: unknown): null {
  if (err instanceof TerminalStatusError) return null;
  throw err;
}

/** The node's ui dict with each file info's name replaced by the name it was committed under. */
function renameInUi(ui: Record<string, unknown> | null, renamed: ReadonlyMap<string, string>): Record<string, unknown> | null {
  if (!ui) return ui;
  const out: Record<string, unknown> = {};
  for (const [key, list] of Object.entries(ui)) {
    out[key] = Array.isArray(list)
      ? list.map((item) => {
          const info = item as { filename?: unknown; type?: unknown };
          const name = typeof info?.filename === "string" ? renamed.get(`${String(info.type)}/${info.filename}`) : undefined;
          return name ? { ...info, filename: name, subfolder: "" } : item;
        })
      : list;
  }
  return out;
}

/** A failure in one line for the log (never a secret: store and network errors name no inputs). */
function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}${(err as { code?: unknown }).code ? ` (${String((err as { code?: unknown }).code)})` : ""}`;
  return String(err);
}

/** The job error of a run whose output could not be stored for lack of space. */
function outOfSpace(at: { node_id: string; class_type: string }): RunFailure {
  return {
    code: "insufficient_storage",
    message: "The server ran out of storage space while saving an output; nothing of it was kept.",
    node_id: at.node_id,
    class_type: at.class_type,
    traceback: null,
  };
}

/** Runs `work`, keeping its promise in `pending` until it settles. */
function track(pending: Set<Promise<unknown>>, work: () => Promise<void>): Promise<void> {
  const p = work();
  pending.add(p);
  void p.finally(() => pending.delete(p)).catch(() => undefined);
  return p;
}

/**
 * Serializes writes of a value so that only the newest waiting value is written next. A write
 * starts once the event loop's turn is over: a turn's snapshots (a burst of node events) make one.
 * With `spacingMs`, the first write waits that long from now and each next one that long after the
 * one before: a run shorter than that writes none.
 */
function latestWins<T>(write: (value: T) => Promise<unknown>, spacingMs = 0): { write(value: T): void; idle(): Promise<void>; settle(): Promise<void> } {
  let waiting: { value: T } | null = null;
  let running: Promise<void> | null = null;
  let writing: Promise<unknown> | null = null;
  let nextAt = spacingMs > 0 ? performance.now() + spacingMs : 0;
  /** The spacing is over (the run ends): what waits is written at once. */
  let flushing = false;
  let wake: (() => void) | null = null;
  const pause = () =>
    new Promise<void>((resolve) => {
      const ms = flushing ? 0 : nextAt - performance.now();
      if (ms <= 0) return void setImmediate(resolve);
      const done = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wake = done;
    });
  const drain = async () => {
    await pause();
    while (waiting !== null) {
      const { value } = waiting;
      waiting = null;
      if (spacingMs > 0) nextAt = performance.now() + spacingMs;
      writing = write(value).catch(() => undefined);
      await writing;
      writing = null;
      if (waiting !== null && spacingMs > 0) await pause();
    }
    running = null;
  };
  return {
    write(value) {
      waiting = { value };
      running ??= drain();
    },
    /** Writes what waits now, and resolves once every value written so far has landed. */
    idle: async () => {
      flushing = true;
      wake?.();
      await running;
    },
    /** Drops the value waiting to be written, and resolves once the write under way has landed. */
    settle: async () => {
      waiting = null;
      wake?.();
      await writing;
    },
  };
}
