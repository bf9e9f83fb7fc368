// One run of one job: engine callbacks become progress, outputs, previews, logs and events.
import type { AssetService } from "../assets/asset-service.ts";
import { TerminalStatusError, type JobRecord, type JobStatus, type Store } from "../store/index.ts";
import type { EnginePort, RunEnd } from "./engine-port.ts";
import type { EventBus } from "./event-bus.ts";
import { LogCapture } from "./log-capture.ts";
import type { OutputNamer } from "./output-names.ts";
import { ProgressTracker, type Progress } from "./progress.ts";

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
}

/** Runs a job that is already `running`, to its terminal state. */
export async function runJob(deps: JobRunDeps, job: JobRecord, extra: { api_key_vendor_org?: string }, signal: AbortSignal): Promise<JobRecord | null> {
  const { store, events, assets } = deps;
  const base = { job_id: job.id, owner: job.owner };
  const tracker = new ProgressTracker();
  const log = new LogCapture(deps.logLimitBytes);
  const progressWrites = latestWins((progress: Progress) => store.updateProgress(job.id, progress));
  const commits = new Set<Promise<unknown>>();
  /** Engine file name -> the unique name it was committed under, by folder. */
  const renamed = new Map<string, string>();

  const report = (progress: Progress) => {
    // Snapshots land in order, and one arriving while a write is under way replaces any older
    // one still waiting: the stored progress catches up at once. The event goes out at once.
    progressWrites.write(progress);
    events.publish({ type: "progress", ...base, progress });
  };

  const graph = (await store.getJobWorkflow(job.id)) ?? {};
  let end: RunEnd;
  try {
    end = await deps.engine.run(graph, {
      jobId: job.id,
      signal,
      extra,
      resolveAsset: (ref) => assets.readOwned(job.owner, ref.id),
      resolveUpload: (name) => assets.readUploadByName(job.owner, name),
      onStart: (nodes) => report(tracker.plan(nodes)),
      onCached: (ids) => {
        events.publish({ type: "cached", ...base, node_ids: ids });
        report(tracker.cached(ids));
      },
      onNodeStart: (node_id, class_type) => {
        events.publish({ type: "node_start", ...base, node_id, class_type });
        report(tracker.nodeStart(node_id, class_type));
      },
      onNodeDone: (node_id, class_type, ui) => {
        events.publish({ type: "node_done", ...base, node_id, class_type, ui: renameInUi(ui, renamed) });
        report(tracker.nodeDone(node_id));
      },
      onProgress: (node_id, value, max) => {
        events.publish({ type: "step", ...base, node_id, value, max });
        report(tracker.step(node_id, value, max));
      },
      onPreview: (node_id, content_type, data) => events.publish({ type: "preview", ...base, node_id, content_type, data }),
      onOutput: (output) =>
        track(commits, async () => {
          const name = await deps.names.reserve(job.owner, output.folder, output.name);
          renamed.set(`${output.folder}/${output.name}`, name);
          const asset = await assets.commitOutput(job, { ...output, name });
          events.publish({ type: "output", ...base, asset });
        }),
      onLog: (text) => {
        log.write(text);
        events.publish({ type: "log", ...base, text });
      },
    });
  } catch {
    // The port promises not to throw; if a backend does anyway, the job still ends.
    end = { kind: "failed", error: { code: "node_execution_error", message: "The workflow failed." } };
  }
  // A canceled run can end while an output is still being committed: it lands before the end state.
  await Promise.allSettled(commits);
  await progressWrites.idle();

  if (deps.captureLogs) {
    const { text, truncated } = log.result();
    await store.setLogs(job.id, { text, truncated, captured_at: deps.now() });
  }
  const now = deps.now();
  let finished: JobRecord | null;
  if (end.kind === "succeeded") {
    const progress = tracker.finish();
    finished = await settle(store, job.id, "succeeded", { completed_at: now, progress });
  } else if (end.kind === "failed") {
    finished = await settle(store, job.id, "failed", { completed_at: now, error: { ...end.error } });
  } else {
    finished = await settle(store, job.id, "canceled", { completed_at: now });
  }
  // The final snapshot (value 1) goes out as progress too, so streams end on job.progress.
  if (finished?.status === "succeeded") events.publish({ type: "progress", ...base, progress: tracker.finish() });
  if (finished) events.publish({ type: "status", job: finished });
  return finished;
}

/**
 * Writes the end of a run. A job canceled meanwhile ends `canceled` whatever the run did; one
 * expired by the reaper stays expired (the database refuses to rewrite a terminal state).
 */
async function settle(store: Store, id: string, to: JobStatus, patch: Parameters<Store["transitionJob"]>[3]): Promise<JobRecord | null> {
  try {
    // A run only stops early because of a cancel request (the job is `canceling`) or the reaper.
    const fromRunning = to === "canceled" ? null : await store.transitionJob(id, ["running"], to, patch);
    if (fromRunning) return fromRunning;
    return await store.transitionJob(id, ["canceling"], "canceled", { completed_at: patch?.completed_at ?? null });
  } catch (err) {
    if (err instanceof TerminalStatusError) return null;
    throw err;
  }
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

/** Runs `work`, keeping its promise in `pending` until it settles. */
function track(pending: Set<Promise<unknown>>, work: () => Promise<void>): Promise<void> {
  const p = work();
  pending.add(p);
  void p.finally(() => pending.delete(p)).catch(() => undefined);
  return p;
}

/** Serializes writes of a value so that only the newest waiting value is written next. */
function latestWins<T>(write: (value: T) => Promise<unknown>): { write(value: T): void; idle(): Promise<void> } {
  let waiting: { value: T } | null = null;
  let running: Promise<void> | null = null;
  const drain = async () => {
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
