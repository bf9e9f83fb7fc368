// Adapts an engine backend (src/engine's Engine) to the port the job lifecycle uses.
import {
  EngineBusyError,
  EngineError,
  ExecutionCancelledError,
  findAssetReferences,
  isAbortError,
  isUiFormat,
  type Engine,
  type RecordedTimes,
} from "../engine/index.ts";
import type { EnginePort, GraphValidation, RecordedRunTimes, RunEnd, RunOptions } from "./engine-port.ts";
import { ServiceError } from "../domain/errors.ts";
import { WORKFLOW_FAILED } from "../domain/failures.ts";

/** The port over an Engine. */
export function engineAdapter(engine: Engine): EnginePort {
  return {
    isUiFormat,
    queuesWork: engine.queuesWork === true,
    resumesRuns: engine.resumesRuns === true,
    assetReferences: (graph) => findAssetReferences(graph).map((r) => ({ node_id: r.node_id, input: r.input, id: r.ref?.id ?? null })),
    async validate(graph): Promise<GraphValidation> {
      const v = await engine.validate(graph);
      if (!v.valid) return { ok: false, node_errors: v.node_errors, comfy: v.comfy };
      await admit(engine);
      return { ok: true, output_node_ids: v.output_nodes };
    },
    run: (graph, options) => run(engine, graph, options),
    nodeDefinitions: () => engine.nodeDefinitions(),
    ready: async () => (engine.ready ? engine.ready() : true),
    upstreams: () => engine.upstreams?.() ?? [],
  };
}

/** A backend that cannot take work refuses the submission: unreachable is a 500, a full queue a 429. */
async function admit(engine: Engine): Promise<void> {
  try {
    await engine.admit?.();
  } catch (err) {
    if (err instanceof EngineBusyError) throw new ServiceError("queue_full", "The queue is full; retry later.", null, err.retryAfterSeconds);
    throw err;
  }
}

async function run(engine: Engine, graph: Record<string, unknown>, o: RunOptions): Promise<RunEnd> {
  let times: RecordedRunTimes | undefined;
  const end = await runOnce(engine, graph, o, (t) => {
    times = { ...(t.startedAt !== undefined ? { started_at: t.startedAt } : {}), ...(t.endedAt !== undefined ? { completed_at: t.endedAt } : {}) };
  });
  return times ? { ...end, times } : end;
}

async function runOnce(engine: Engine, graph: Record<string, unknown>, o: RunOptions, onRecordedTimes: (t: RecordedTimes) => void): Promise<RunEnd> {
  try {
    // A backend whose runs live in this process stops them when detached, as when canceled.
    const detachable = engine.resumesRuns === true;
    await engine.execute(graph, {
      runId: o.jobId,
      ...(o.resume ? { resumeOnly: true } : {}),
      ...(o.unsent ? { unsent: true } : {}),
      signal: o.detach && !detachable ? AbortSignal.any([o.signal, o.detach]) : o.signal,
      ...(o.detach && detachable ? { detach: o.detach } : {}),
      extra: o.extra,
      ...(o.holdsRun ? { holdsRun: o.holdsRun } : {}),
      ...(o.takenOver ? { takenOver: o.takenOver } : {}),
      async resolveAsset(ref) {
        const found = await o.resolveAsset(ref);
        if (!found) {
          throw new EngineError({
            code: "invalid_input",
            message: "A referenced asset is no longer available.",
            node_id: null,
            class_type: null,
            traceback: null,
          });
        }
        return found;
      },
      resolveUpload: o.resolveUpload,
      onStart: o.onStart,
      onQueued: o.onQueued,
      onRunning: o.onRunning,
      onCached: o.onCached,
      onNodeStart: o.onNodeStart,
      onNodeDone: o.onNodeDone,
      onProgress: o.onProgress,
      ...(o.onActivity ? { onActivity: o.onActivity } : {}),
      onPreview: o.onPreview,
      onOutput: o.onOutput,
      onLog: o.onLog,
      onRecordedTimes,
    });
    return { kind: "succeeded" };
  } catch (err) {
    const stopped = o.signal.aborted || o.detach?.aborted === true;
    if (err instanceof ExecutionCancelledError || (stopped && isAbortError(err))) return { kind: "canceled" };
    if (err instanceof EngineError) return { kind: "failed", error: { ...err.jobError } };
    if (stopped) return { kind: "canceled" };
    return { kind: "failed", error: { ...WORKFLOW_FAILED, node_id: null, class_type: null, traceback: null }, cause: err };
  }
}
