// One run of one job: engine callbacks become progress, outputs, previews, logs and events.
import type { AssetService, StoredOutput } from "../assets/asset-service.ts";
import { LeaseLostError, TerminalStatusError, type AssetRecord, type JobPatch, type JobRecord, type JobStatus, type RunFence, type Store } from "../store/index.ts";
import { UPSTREAM_FAILURE } from "../domain/failures.ts";
import { isOutOfSpace } from "../datadir/space.ts";
import type { EnginePort, RunEnd, RunFailure } from "./engine-port.ts";
import type { EventBus } from "./event-bus.ts";
import { LogCapture } from "./log-capture.ts";
import type { OutputNamer } from "./output-names.ts";
import { OutputRows } from "./output-rows.ts";
import { ProgressTracker, type Progress } from "./progress.ts";

/**
 * Most bytes of one run's last outputs staged for its end's commit (BlobStore.stage, up to 256 KiB
 * each): beyond, outputs are durable before the end as any other, so that one commit stays small.
 */
export const STAGED_BYTES_PER_RUN = 4 * 1024 * 1024;

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
   * write instead of two, their events just before the end's. Off (the default) where other
   * processes hear runs through a relay: they must hear the outputs before the end commits.
   */
  endWithOutputs?: boolean;
}

/** What the dispatcher hears of a run whose job is still `queued` (an engine with its own queue). */
export interface QueuedRunHooks {
  /** Work ahead of the job in the engine's queue. */
  onQueued(ahead: number): void;
  /** The job is `running` now (or ended without a start the engine reported). */
  onRunning(): void;
}

/**
 * Runs a job to its terminal state. A `running` job runs from now on; a `queued` one (an engine
 * with a queue of its own) moves to `running` when the engine reports that its graph started.
 * `resume`: the job was running when an earlier process died, and the engine follows that run
 * (EnginePort.resumesRuns); outputs it recorded then are not recorded twice.
 */
export async function runJob(
  deps: JobRunDeps,
  job: JobRecord,
  extra: { api_key_vendor_org?: string },
  outerSignal: AbortSignal,
  hooks?: QueuedRunHooks,
  fence: RunFence = { workerId: null, epoch: 0 },
  resume = false,
): Promise<JobRecord | null> {
  const { store, events, assets } = deps;
  const base = { job_id: job.id, owner: job.owner };
  const tracker = new ProgressTracker();
  const log = new LogCapture(deps.logLimitBytes);
  const persist = deps.persistEnd ?? ((write) => write());
  /** Aborts the run once one of its writes is refused: it no longer holds its job. */
  const fenced = new AbortController();
  const signal = AbortSignal.any([outerSignal, fenced.signal]);
  let leaseLost = false;
  /** True (and the run stopped) when `err` says the run no longer holds its job. */
  const refused = (err: unknown): boolean => {
    if (!(err instanceof LeaseLostError)) return false;
    if (!leaseLost) {
      leaseLost = true;
      deps.log?.(`job ${job.id}: a write of its run was refused: the run no longer holds its lease (the job ended elsewhere); the run stops and writes nothing more`);
      fenced.abort();
    }
    return true;
  };
  /** Infrastructure that failed under the run (not the workflow): the job ends upstream_error. */
  let infraFailure: unknown = null;
  // Progress is fenced with leases only: without, a snapshot may race the move to running (an engine with a queue).
  const progressFence = fence.workerId === null ? undefined : fence;
  /** The end is being written: a snapshot still waiting then finds the job ended, as it should. */
  let ending = false;
  const progressWrites = latestWins((progress: Progress) =>
    store.updateProgress(job.id, progress, progressFence).catch((err: unknown) => {
      if (ending && err instanceof LeaseLostError) return;
      if (!refused(err)) throw err;
    }),
  );
  const commits = new Set<Promise<unknown>>();
  /** The output that could not be stored for lack of space, if any: the job fails with `insufficient_storage`. */
  let spaceFailure: { node_id: string; class_type: string } | null = null;
  /** Engine file name -> the unique name it was committed under, by folder. */
  const renamed = new Map<string, string>();
  /** Records of the last output node's outputs, held to be written with the run's end. */
  const rows = new OutputRows(assets, undefined, { fence, persist });
  /** Output nodes not done yet: once only one is left, its outputs are the run's last. */
  const outputNodesLeft = new Set(job.output_node_ids);
  /** Bytes of the last outputs staged so far (see STAGED_BYTES_PER_RUN). */
  let stagedBytes = 0;

  const report = (progress: Progress) => {
    // Snapshots land in order, and one arriving while a write is under way replaces any older
    // one still waiting: the stored progress catches up at once. The event goes out at once.
    progressWrites.write(progress);
    events.publish({ type: "progress", ...base, progress });
  };

  let started = job.status !== "queued";
  /** The plan, kept back while the job is queued: progress belongs to running jobs. */
  let planned: Progress | null = null;
  /**
   * While the move to `running` or an output's record commits, what the run reports waits behind
   * it, in order, so the `running` status and the output go out first; the engine goes on meanwhile.
   */
  let startCommit: Promise<void> | null = null;
  /** The move to `running`, once asked for, until it is durable and published. */
  let runningCommit: Promise<void> | null = null;
  /** Settles once that move has committed (or failed): the end commits after it, not after its fsync. */
  let runningCommitted: Promise<void> | null = null;
  const waitFor = (step: Promise<void>): void => {
    startCommit = step;
    void step.then(() => {
      if (startCommit === step) startCommit = null;
    });
  };
  const inOrder = (publish: () => void): void => (startCommit ? waitFor(startCommit.then(publish)) : publish());
  /** Publishes once `gate` resolves (it never rejects), keeping its place in the order. */
  const inOrderAfter = <T>(gate: Promise<T>, publish: (value: T) => void): void => waitFor((startCommit ?? Promise.resolve()).then(() => gate).then(publish));
  const markRunning = (): void => {
    if (started) return;
    started = true;
    let committed!: () => void;
    runningCommitted = new Promise<void>((resolve) => (committed = resolve));
    runningCommit = store
      // With leases the job was claimed while queued: it moves only while this run's claim holds.
      .transitionJob(job.id, ["queued"], "running", { started_at: deps.now() }, { onCommitted: () => committed(), ...(progressFence ? { fence: progressFence } : {}) })
      .catch((err: unknown) => (refused(err) ? null : ignoreTerminal(err)))
      .then((moved) => {
        hooks?.onRunning();
        if (!moved) return; // canceled or expired meanwhile: the run is being stopped
        events.publish({ type: "status", job: moved });
        if (planned) report(planned);
      });
    runningCommit.then(committed, committed);
    waitFor(runningCommit);
  };

  /** A resumed run's outputs recorded before the restart, by node and content hash: their names. */
  let recordedBefore: Map<string, string> | null = null;
  let end: RunEnd;
  try {
    const graph = (await persist(() => store.getJobWorkflow(job.id))) ?? {};
    if (resume) recordedBefore = new Map((await persist(() => store.listJobOutputs(job.id))).map((a) => [`${a.node_id}\u0000${a.hash}`, a.name]));
    end = await deps.engine.run(graph, {
      jobId: job.id,
      ...(resume ? { resume: true } : {}),
      signal,
      extra,
      resolveAsset: (ref) => assets.readOwned(job.owner, ref.id),
      resolveUpload: (name) => assets.readUploadByName(job.owner, name),
      onStart: (nodes) => {
        const plan = tracker.plan(nodes);
        if (started) report(plan);
        else planned = plan;
      },
      onQueued: (ahead) => hooks?.onQueued(ahead),
      onRunning: markRunning,
      onCached: (ids) => {
        for (const id of ids) outputNodesLeft.delete(id);
        rows.flush(); // the run goes on: records held so far are written now
        inOrder(() => {
          events.publish({ type: "cached", ...base, node_ids: ids });
          report(tracker.cached(ids));
        });
      },
      onNodeStart: (node_id, class_type) => {
        rows.flush();
        inOrder(() => {
          events.publish({ type: "node_start", ...base, node_id, class_type });
          report(tracker.nodeStart(node_id, class_type));
        });
      },
      onNodeDone: (node_id, class_type, ui) => {
        outputNodesLeft.delete(node_id);
        const renamedUi = renameInUi(ui, renamed);
        inOrder(() => {
          events.publish({ type: "node_done", ...base, node_id, class_type, ui: renamedUi });
          report(tracker.nodeDone(node_id));
        });
      },
      onProgress: (node_id, value, max) => {
        rows.flush();
        inOrder(() => {
          events.publish({ type: "step", ...base, node_id, value, max });
          report(tracker.step(node_id, value, max));
        });
      },
      onPreview: (node_id, content_type, data) => inOrder(() => events.publish({ type: "preview", ...base, node_id, content_type, data })),
      onOutput: (output) =>
        track(commits, async () => {
          const name = await persist(() => deps.names.reserve(job.owner, output.folder, output.name));
          renamed.set(`${output.folder}/${output.name}`, name);
          const node = { node_id: output.node_id, class_type: output.class_type };
          const last = deps.endWithOutputs === true && [...outputNodesLeft].every((id) => id === output.node_id);
          let asset: Promise<AssetRecord | null>;
          try {
            // An output of the last output node is staged (its bytes kept by the end's commit
            // until its file is durable: one fsync for all); any other is durable before its record.
            const stage = last && stagedBytes + output.data.byteLength <= STAGED_BYTES_PER_RUN;
            if (stage) stagedBytes += output.data.byteLength;
            const stored = await assets.storeOutput(job, { ...output, name }, { stage });
            // Recorded by the process that died: the engine delivers it again, the job keeps the one record.
            const before = recordedBefore?.get(`${output.node_id}\u0000${stored.record.hash}`);
            if (before !== undefined) {
              renamed.set(`${output.folder}/${output.name}`, before);
              void assets.discardOutputs([stored]);
              return;
            }
            // The record of an output of the last output node waits for the run's end (written
            // in its commit); any other is written now, before the run goes on.
            asset = last ? rows.hold(stored, node) : Promise.resolve(await assets.recordOutput(stored, { fence, persist }));
          } catch (err) {
            if (isOutOfSpace(err)) spaceFailure ??= node;
            else if (!refused(err)) infraFailure ??= err;
            throw err;
          }
          inOrderAfter(asset, (written) => {
            if (written) events.publish({ type: "output", ...base, asset: written });
          });
        }),
      onLog: (text) => {
        log.write(text);
        inOrder(() => events.publish({ type: "log", ...base, text }));
      },
    });
  } catch (err) {
    // The port promises not to throw, but the graph read can fail (retried until a stop): the job still ends.
    infraFailure ??= err;
    end = { kind: "failed", error: { code: "node_execution_error", message: "The workflow failed." } };
  }
  // An end the engine reached without reporting a start (a prompt it refused, a missed message)
  // still passes through `running`: a job only leaves `queued` by running or by a cancel.
  if (end.kind !== "canceled") markRunning();
  // The end needs the job moved, not that move durable: when both come in one turn (a ComfyUI
  // that reports a short prompt's start with its end), one fsync makes both durable. Its events
  // still go out after the move's (startCommit).
  await runningCommitted;
  // A canceled run can end while an output is still being stored: it lands before the end state.
  await Promise.allSettled(commits);
  await rows.idle();
  // A held record a flush could not write: the run cannot succeed without it.
  if (rows.failure !== null && !refused(rows.failure.error)) {
    if (isOutOfSpace(rows.failure.error)) end = { kind: "failed", error: outOfSpace(rows.failure.node) };
    else infraFailure ??= rows.failure.error;
  }
  if (end.kind === "failed" && spaceFailure !== null) end = { kind: "failed", error: outOfSpace(spaceFailure) };
  // What infrastructure ended is never the workflow's failure, and says why where an operator looks.
  else if (infraFailure !== null && end.kind !== "canceled") {
    end = { kind: "failed", error: { ...UPSTREAM_FAILURE } };
    deps.log?.(`job ${job.id}: ends failed upstream_error: ${describe(infraFailure)}`);
  }
  if (end.kind !== "succeeded") {
    // Other ends keep the last snapshot, so it lands first, after what the held records hold back.
    rows.flush();
    await rows.idle();
    await startCommit;
    await progressWrites.idle();
  }
  // A success writes its last records and its final progress with its end, in one commit (a
  // progress write still waiting then finds the job no longer running and changes nothing).
  const held = rows.takeForEnd();

  // Other processes hear the run's events before its end (notifications go in commit order).
  await events.relayed();

  ending = true;
  const ended = leaseLost ? null : await persist(async () => {
    if (deps.captureLogs) {
      const { text, truncated } = log.result();
      await store.setLogs(job.id, { text, truncated, captured_at: deps.now() }, fence);
    }
    const now = deps.now();
    if (end.kind === "succeeded") {
      const progress = tracker.finish();
      try {
        return await settle(store, job.id, "succeeded", { completed_at: now, progress }, held.stored, fence);
      } catch (err) {
        if (!isOutOfSpace(err) || held.stored.length === 0) throw err;
        // The records do not fit: the job fails as when an output's bytes do not.
        end = { kind: "failed", error: outOfSpace(held.nodes[0]!) };
        await held.done(null);
        held.stored.length = 0;
      }
    }
    if (end.kind === "failed") return settle(store, job.id, "failed", { completed_at: now, error: { ...end.error } }, [], fence);
    return settle(store, job.id, "canceled", { completed_at: now }, [], fence);
  }).catch((err: unknown) => {
    if (refused(err)) return null;
    throw err;
  });
  // Nothing moved: the job ended elsewhere (or, with leases, is held by no claim of this run).
  // (A job canceled while it was queued, claimed while queued, ended canceled without its run.)
  if (ended === null && !leaseLost && fence.workerId !== null && started) deps.log?.(`job ${job.id}: its end was not written: the run no longer holds its lease (the job ended elsewhere)`);
  const finished = ended?.job ?? null;
  if (held.stored.length > 0) await held.done(ended?.assets ?? null);
  // Written with their bytes kept: the store forgets those once the files are durable, off the path.
  if (ended?.assets.length) void assets.settlePending(held.stored).catch(() => undefined);
  // What the run reported before its end goes out before it.
  await startCommit;
  // The final snapshot (value 1) goes out as progress too, so streams end on job.progress.
  if (finished?.status === "succeeded") events.publish({ type: "progress", ...base, progress: tracker.finish() });
  if (finished) events.publish({ type: "status", job: finished });
  return finished;
}

/**
 * Writes the end of a run. A job canceled meanwhile ends `canceled` whatever the run did; one
 * expired by the reaper stays expired (the database refuses to rewrite a terminal state).
 */
async function settle(store: Store, id: string, to: JobStatus, patch: JobPatch, outputs: readonly StoredOutput[], fence: RunFence): Promise<{ job: JobRecord; assets: AssetRecord[] } | null> {
  const records = outputs.map((s) => s.record);
  const pending = outputs.flatMap((s) => (s.pending === null ? [] : [s.pending]));
  // Records (and staged bytes) go with whichever move lands, in its transaction; none is written if none does.
  const move = async (from: JobStatus, to: JobStatus, patch: JobPatch) => {
    if (records.length > 0) return store.transitionJobWithAssets(id, [from], to, patch, records, pending, fence);
    const job = await store.transitionJob(id, [from], to, patch, { fence });
    return job && { job, assets: [] };
  };
  try {
    // A run only stops early because of a cancel request (the job is `canceling`) or the reaper.
    const fromRunning = to === "canceled" ? null : await move("running", to, patch);
    if (fromRunning) return fromRunning;
    // A run that succeeded after a late cancel request ends canceled with its final progress:
    // the stream may already have published it, and the job must not read as less.
    return await move("canceling", "canceled", { completed_at: patch.completed_at ?? null, ...(patch.progress ? { progress: patch.progress } : {}) });
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
 */
function latestWins<T>(write: (value: T) => Promise<unknown>): { write(value: T): void; idle(): Promise<void> } {
  let waiting: { value: T } | null = null;
  let running: Promise<void> | null = null;
  const drain = async () => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (waiting !== null) {
      const { value } = waiting;
      waiting = null;
      await write(value).catch(() => undefined);
    }
    running = null;
  };
  return {
    write(value) {
      waiting = { value };
      running ??= drain();
    },
    idle: async () => {
      await running;
    },
  };
}
