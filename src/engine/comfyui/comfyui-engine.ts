// The comfyui backend: the Engine interface over one or more real ComfyUI instances, which stay
// unchanged. Validation uses their object_info with the embedded engine's rules; a run uploads
// its inputs, queues the prompt on the least busy instance and follows it to a confirmed end.
import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { EngineValidationError } from "../embedded-engine.ts";
import { EngineBusyError, EngineUnavailableError, type Engine, type ExecuteOptions, type ExecuteResult } from "../engine.ts";
import { EngineError, ExecutionCancelledError } from "../errors.ts";
import { isPlainObject } from "../graph.ts";
import type { NodeRegistry } from "../nodes/registry.ts";
import type { ObjectInfo } from "../object-info.ts";
import { analyzeGraph, validationResult, type Analysis, type ValidationResult } from "../validate.ts";
import { mergeObjectInfo, registryOf } from "./definitions.ts";
import { jobErrorOfRefusal, validationOfComfy400 } from "./error-mapping.ts";
import { ComfyHttpError, ComfyUnreachableError, type HttpTimeouts } from "./http-api.ts";
import type { HeldPrompt, Instance, InstanceTimings } from "./instance.ts";
import { InstancePool } from "./pool.ts";
import { PromptRun, ReassignError, type RunTimings } from "./prompt-run.ts";
import type { SocketTimings } from "./socket.ts";
import { prepareInputs } from "./uploads.ts";

/** Construction options of the comfyui backend (every duration in ms). */
export interface ComfyUIEngineOptions {
  /** Base URLs of the instances, like http://127.0.0.1:8188. */
  urls: readonly string[];
  /**
   * The instances' output folders (one for all, or one per URL in order): output files are read
   * from there instead of fetched with /view, which stays the fallback. A path, `auto` (the
   * default: an instance on this machine is asked where its folder is, and the folder is used
   * once a file read from it equals what /view served) or `off` (always /view).
   */
  outputDirs?: readonly string[];
  /** Submissions get queue_full when every reachable instance has this many prompts queued (default: no bound). */
  maxQueue?: number;
  /** object_info is refetched when older than this (default 5 min). */
  objectInfoTtlMs?: number;
  /** A graph with an unknown class refetches object_info when it is older than this (default 5 s): a custom node may just have been installed. */
  unknownClassRefreshMs?: number;
  /** Reconcile interval of prompts in flight against /queue and /history (default 2 s). */
  pollIntervalMs?: number;
  /** Prompts fail with worker_lost after their instance was unreachable this long (default 5 min). */
  lostAfterMs?: number;
  /** A prompt not started yet goes to another reachable instance after its own was unreachable this long (default 15 s). */
  reassignAfterMs?: number;
  /** How long a run waits for a reachable instance before failing with worker_lost (default 60 s). */
  unreachableGraceMs?: number;
  confirmTimeoutMs?: number;
  cancelWaitMs?: number;
  /** First socket reconnect wait (default 250 ms); it doubles per failed or short-lived connection, with jitter. */
  reconnectMinMs?: number;
  /** Cap of the reconnect wait (default 15 s). */
  reconnectMaxMs?: number;
  /** A socket connection open this long resets the reconnect backoff (default 60 s). */
  reconnectStableMs?: number;
  pingIntervalMs?: number;
  probeTimeoutMs?: number;
  http?: Partial<HttpTimeouts>;
  /** Test seams of the socket: the jitter's random numbers and the reconnect scheduler. */
  socket?: Pick<SocketTimings, "random" | "schedule">;
  /** Where the backend says what an operator should know (default: standard error, `flowgate: ` first). */
  log?: (line: string) => void;
}

/** What a run submits, once or again on another instance. */
interface Submission {
  graph: Record<string, unknown>;
  registry: NodeRegistry;
  options: ExecuteOptions;
  secrets: string[];
  key: string | undefined;
  promptId: string;
}

/** The key name ComfyUI reads the partner key from in a prompt's extra_data. */
const PARTNER_KEY = "api_key_vendor_org";

/** The Engine over ComfyUI instances. */
export class ComfyUIEngine implements Engine {
  readonly kind = "comfyui";
  /** A prompt waits in ComfyUI's queue first: onQueued while it waits, onRunning at its execution_start. */
  readonly queuesWork = true;
  /** A prompt runs on in ComfyUI when flowgate dies: a restarted flowgate follows or collects it by its id. */
  readonly resumesRuns = true;
  private readonly pool: InstancePool;
  private readonly o: Required<Omit<ComfyUIEngineOptions, "maxQueue" | "http" | "socket">> & Pick<ComfyUIEngineOptions, "maxQueue" | "http" | "socket">;
  private merged: { docs: Record<string, unknown>[]; registry: NodeRegistry } | null = null;

  constructor(options: ComfyUIEngineOptions) {
    this.o = {
      objectInfoTtlMs: 300_000,
      unknownClassRefreshMs: 5_000,
      pollIntervalMs: 2_000,
      lostAfterMs: 300_000,
      reassignAfterMs: 15_000,
      unreachableGraceMs: 60_000,
      confirmTimeoutMs: 30_000,
      cancelWaitMs: 15_000,
      reconnectMinMs: 250,
      reconnectMaxMs: 15_000,
      reconnectStableMs: 60_000,
      pingIntervalMs: 30_000,
      probeTimeoutMs: 3_000,
      outputDirs: [],
      log: (line) => void process.stderr.write(`flowgate: ${line}\n`),
      ...options,
    };
    const dirs = this.o.outputDirs;
    if (dirs.length > 1 && dirs.length !== options.urls.length) throw new Error("give one ComfyUI output folder for all instances, or one per instance");
    const timings: InstanceTimings = {
      pollIntervalMs: this.o.pollIntervalMs,
      objectInfoTtlMs: this.o.objectInfoTtlMs,
      lostAfterMs: this.o.lostAfterMs,
      reassignAfterMs: this.o.reassignAfterMs,
      probeTimeoutMs: this.o.probeTimeoutMs,
      reconnectMinMs: this.o.reconnectMinMs,
      reconnectMaxMs: this.o.reconnectMaxMs,
      stableAfterMs: this.o.reconnectStableMs,
      ...this.o.socket,
      pingIntervalMs: this.o.pingIntervalMs,
      http: this.o.http ?? {},
    };
    this.pool = new InstancePool(
      options.urls,
      timings,
      options.urls.map((_, i) => (dirs.length === 1 ? dirs[0]! : (dirs[i] ?? "auto"))),
    );
  }

  /** The instances' base URLs (without credentials). */
  get urls(): string[] {
    return this.pool.instances.map((i) => i.url);
  }

  /** Each instance's reachability, socket reconnections and where its outputs are read (metrics). */
  upstreams(): { url: string; reachable: boolean; reconnects: number; outputFolder: boolean }[] {
    return this.pool.instances.map((i) => ({ url: i.url, reachable: i.reachable, reconnects: i.reconnects, outputFolder: i.outputs.state === "folder" }));
  }

  /** object_info of every instance, merged (first instance wins per class). */
  async nodeDefinitions(): Promise<ObjectInfo> {
    return mergeObjectInfo(await this.definitions(false));
  }

  /** Refetches object_info from every instance now. */
  async refreshNodeDefinitions(): Promise<void> {
    await this.definitions(true);
  }

  /** Validation against the instances' nodes with the embedded engine's rules. */
  async validate(graph: unknown): Promise<ValidationResult> {
    let result = validationResult(analyzeGraph(graph, await this.registry(false)));
    const unknown = Object.values(result.node_errors).some((errs) => errs.some((e) => e.reason === "unknown_class"));
    if (unknown && this.pool.instances.some((i) => i.infoAge >= this.o.unknownClassRefreshMs)) {
      result = validationResult(analyzeGraph(graph, await this.registry(true)));
    }
    return result;
  }

  /** Rejects a submission when no instance answers, or when every one's queue is at the bound. */
  async admit(): Promise<void> {
    const loads = (await this.pool.probeAll()).filter((l): l is number => l !== null);
    if (loads.length === 0) throw new EngineUnavailableError("No ComfyUI instance is reachable");
    if (this.o.maxQueue !== undefined && loads.every((l) => l >= this.o.maxQueue!)) throw new EngineBusyError(5);
  }

  /** Ready when an instance answers and node definitions are known. */
  async ready(): Promise<boolean> {
    const loads = await this.pool.probeAll();
    if (!loads.some((l) => l !== null)) return false;
    return this.definitions(false).then(
      () => true,
      () => false,
    );
  }

  async close(): Promise<void> {
    this.pool.close();
  }

  /** Runs a graph on the least busy instance; see Engine.execute. */
  async execute(graph: unknown, options: ExecuteOptions = {}): Promise<ExecuteResult> {
    const { signal } = options;
    // A resumed run canceled before the restart still stops its prompt where ComfyUI runs it.
    if (signal?.aborted && !options.resumeOnly) throw new ExecutionCancelledError();
    const registry = await this.registryOnceReachable(options);
    const analysis = analyzeGraph(graph, registry);
    if (analysis.issues.length > 0) throw new EngineValidationError(await this.validate(graph));
    const g = graph as Record<string, unknown>;
    const key = options.extra?.api_key_vendor_org;
    const secrets = key ? [key] : [];
    const promptId = options.runId ?? randomUUID();
    const startedAt = Date.now();

    await options.onStart?.({ nodes: analysis.order, cached: [], steps: stepsOf(analysis) });

    const s: Submission = { graph: g, registry, options, secrets, key, promptId };
    // A prompt an instance holds already (submitted before flowgate restarted) is followed or
    // collected, never queued twice. One no process ever sent (unsent) is not looked for.
    let run = options.resumeOnly
      ? await this.resumeStarted(promptId, g, registry, options)
      : ((options.unsent ? null : await this.resume(promptId, g, registry, options, secrets)) ?? (await this.submit(s)));
    const { detach } = options;
    for (;;) {
      const active: PromptRun = run;
      const onAbort = () => void active.stop("cancel");
      // Another process took the job over: it follows the prompt from now on, untouched.
      const onDetach = () => active.detach();
      if (detach?.aborted) onDetach();
      detach?.addEventListener("abort", onDetach, { once: true });
      if (signal?.aborted) onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      const timer = options.timeoutMs ? setTimeout(() => void active.stop("timeout"), Math.max(0, startedAt + options.timeoutMs - Date.now())) : null;
      timer?.unref();
      try {
        return await active.result;
      } catch (err) {
        // It never started on an instance that stopped answering: another one takes it.
        if (!(err instanceof ReassignError) || signal?.aborted || detach?.aborted) throw err;
      } finally {
        signal?.removeEventListener("abort", onAbort);
        detach?.removeEventListener("abort", onDetach);
        if (timer) clearTimeout(timer);
      }
      run = await this.submit(s);
    }
  }

  /** Queues the prompt on the least busy instance (waiting up to unreachableGraceMs for one), inputs uploaded first. */
  private async submit(s: Submission): Promise<PromptRun> {
    const { graph: g, registry, options, secrets, key, promptId } = s;
    const { signal, detach } = options;
    // A stop that hands the job over before its POST posts nothing: whoever holds the job next submits it.
    const halt = detach ? AbortSignal.any(signal ? [signal, detach] : [detach]) : signal;
    const deadline = Date.now() + this.o.unreachableGraceMs;
    let run: PromptRun | null = null;
    while (!run) {
      const instance = await this.pool.choose(classTypesOf(g), halt, deadline);
      let phase: "inputs" | "post" = "inputs";
      try {
        const nodes = instance.registry ?? registry;
        const prompt = await prepareInputs(g, nodes, instance.http, instance.uploads, options);
        if (halt?.aborted) throw new ExecutionCancelledError();
        const body: Record<string, unknown> = { prompt, client_id: instance.clientId, prompt_id: promptId };
        // The partner key travels in this request only; it is never kept or logged.
        if (key) body.extra_data = { [PARTNER_KEY]: key };
        // Under leases, posted only while this process still holds the job, its lease renewed now: a
        // process stopped since its claim never posts a prompt another one has taken over.
        if (!(await stillHolds(options, deadline)) || halt?.aborted) throw new ExecutionCancelledError();
        phase = "post";
        const connectionAtPost = instance.connection;
        const accepted = await instance.http.postPrompt(body);
        if (await this.lostOncePosted(instance, promptId, options)) throw new ExecutionCancelledError();
        run = this.newRun(instance, g, nodes, options, secrets, connectionAtPost);
        run.accepted(accepted.prompt_id);
        // Everything queued there at the probe is ahead of it; the reconcile refines this.
        run.queued(instance.load);
        instance.follow(run, true);
        // ComfyUI queues the outputs that validated and reports the others; here any error fails the job.
        if (Object.keys(accepted.node_errors).length > 0) {
          void run.stop("cancel");
          run.failWith(refusal({ error: null, node_errors: accepted.node_errors }));
        }
      } catch (err) {
        // The POST's fate is unknown: once the instance answers, it says whether it has the prompt.
        if (phase === "post" && err instanceof ComfyUnreachableError && !err.notSent) {
          const held = await this.askAgain(instance, promptId, signal, deadline);
          if (held) {
            if (await this.lostOncePosted(instance, promptId, options)) throw new ExecutionCancelledError();
            run = this.adopt(instance, held, promptId, g, registry, options, secrets);
            continue;
          }
          if (held === null && Date.now() < deadline) continue; // it never arrived: submit it (again)
        }
        // Not queued for sure: try again (another instance, or this one once it is back).
        if (Date.now() < deadline && isRetryable(err, phase)) {
          await new Promise((r) => setTimeout(r, 500));
          continue;
        }
        throw mapSubmitError(err, phase);
      } finally {
        instance.reserved--;
      }
    }
    return run;
  }

  /**
   * Whether this process lost the run by the time its POST landed (ExecuteOptions.holdsRun, asked
   * again): a process stopped past its lease between the renewal before its POST and the POST may
   * have posted a prompt another process took over, and posted, meanwhile. Its copy is then
   * withdrawn (withdraw). Unknown (the lease could not be read): held; a run that lost its lease
   * writes nothing anyway, its writes refused.
   */
  private async lostOncePosted(instance: Instance, promptId: string, options: ExecuteOptions): Promise<boolean> {
    if (!options.holdsRun || (await options.holdsRun().catch(() => true))) return false;
    // Unknown: taken over (deleting a copy another process follows would fail its job).
    const taken = options.takenOver ? await options.takenOver().catch(() => true) : true;
    await this.withdraw(instance, promptId, taken);
    return true;
  }

  /**
   * Takes back the copy of a prompt this process posted after it lost the job. Another process took
   * the job over (`taken`): only when the instance holds another copy, a second one queued or
   * running, or one finished already (ComfyUI's `POST /queue {"delete": [id]}` removes one pending
   * copy of the id); a copy alone is left, as the new holder follows it or finds it when it asks
   * before posting. The job ended (canceled meanwhile): its prompt is stopped. Best effort: each
   * outcome is logged.
   */
  private async withdraw(instance: Instance, promptId: string, taken: boolean): Promise<void> {
    const say = (what: string) => this.o.log(`job ${promptId}: its prompt was posted after this worker lost the job; ${what}`);
    try {
      const q = await instance.http.queue();
      if (!taken) {
        if (q.pending.includes(promptId)) await instance.http.deletePending([promptId]);
        else if (q.running.includes(promptId)) await instance.http.interrupt(promptId);
        return say("the job ended meanwhile: its prompt was stopped in ComfyUI");
      }
      const copies = [...q.running, ...q.pending].filter((id) => id === promptId).length;
      const others = copies - 1 + (copies < 2 && (await instance.http.history(promptId)) !== null ? 1 : 0);
      if (others < 1) return say("it is the only copy ComfyUI holds, left to the process holding the job");
      if (!q.pending.includes(promptId)) return say("ComfyUI started it already: it runs a second time");
      await instance.http.deletePending([promptId]);
      say("ComfyUI holds another copy: this one was taken out of its queue");
    } catch (err) {
      say(`ComfyUI could not be asked whether it holds another copy (${(err as Error).message}): it may run a second time`);
    }
  }

  /**
   * The run of a prompt some instance holds already (from an earlier flowgate process), or null
   * when none does; `unread`: whether an instance could not be asked (unreachable).
   */
  private async resume(
    promptId: string,
    graph: Record<string, unknown>,
    registry: NodeRegistry,
    options: ExecuteOptions,
    secrets: string[],
    unread?: { any: boolean },
  ): Promise<PromptRun | null> {
    // Asked of each instance now, never answered from an earlier read: another worker may have
    // handed it the prompt after this process first connected.
    for (const instance of this.pool.instances) {
      const held = await instance.find(promptId).catch(() => undefined);
      if (held === undefined && unread) unread.any = true;
      if (held) return this.adopt(instance, held, promptId, graph, registry, options, secrets);
    }
    return null;
  }

  /**
   * A prompt started before flowgate restarted: followed where an instance holds it, collected
   * when it finished there. It is never submitted again (it may have run, partner nodes charged):
   * when no instance holds it, once each has answered or unreachableGraceMs passed, it is lost.
   */
  private async resumeStarted(promptId: string, graph: Record<string, unknown>, registry: NodeRegistry, options: ExecuteOptions): Promise<PromptRun> {
    const deadline = Date.now() + this.o.unreachableGraceMs;
    for (let wait = 100; ; wait = Math.min(wait * 2, 2000)) {
      const unread = { any: false };
      // The partner key is not held after a restart: nothing is redacted beyond what ComfyUI sends.
      const run = await this.resume(promptId, graph, registry, options, [], unread);
      if (run) return run;
      if (options.signal?.aborted || options.detach?.aborted) throw new ExecutionCancelledError();
      if (!unread.any || Date.now() >= deadline) {
        throw new EngineError({
          code: "worker_lost",
          message: "The prompt was handed to ComfyUI before the flowgate process following it stopped, and no ComfyUI instance holds it any more.",
          node_id: null,
          class_type: null,
          traceback: null,
        });
      }
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  /**
   * Asks an instance whether it holds a prompt whose POST went unanswered, waiting for it to
   * answer until the deadline: where it is, null when it never got it, undefined when it stayed
   * unreachable.
   */
  private async askAgain(instance: Instance, promptId: string, signal: AbortSignal | undefined, deadline: number): Promise<HeldPrompt | null | undefined> {
    for (let wait = 100; Date.now() < deadline && !signal?.aborted; wait = Math.min(wait * 2, 2000)) {
      try {
        return await instance.find(promptId);
      } catch {
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    return undefined;
  }

  /** Follows a prompt an instance holds: it waits or runs there, or its finished entry is collected. */
  private adopt(
    instance: Instance,
    held: HeldPrompt,
    promptId: string,
    graph: Record<string, unknown>,
    registry: NodeRegistry,
    options: ExecuteOptions,
    secrets: string[],
  ): PromptRun {
    const run = this.newRun(instance, graph, instance.registry ?? registry, options, secrets, null);
    run.accepted(promptId);
    instance.follow(run, false);
    if (held.state === "pending") {
      run.queued(held.ahead);
      return run;
    }
    // It started there (and may have ended): running first, as for any prompt, then its end.
    run.push({ kind: "running" });
    if (held.state === "finished") run.push({ kind: "history", entry: held.entry });
    return run;
  }

  private newRun(
    instance: Instance,
    graph: Record<string, unknown>,
    registry: NodeRegistry,
    options: ExecuteOptions,
    secrets: string[],
    connectionAtPost: number | null,
  ): PromptRun {
    return new PromptRun({
      http: instance.http,
      graph,
      registry,
      callbacks: options,
      secrets,
      timings: { confirmTimeoutMs: this.o.confirmTimeoutMs, cancelWaitMs: this.o.cancelWaitMs } satisfies RunTimings,
      onSettled: (r) => instance.forget(r),
      connection: () => instance.connection,
      connectionAtPost,
      outputs: instance.outputs,
    });
  }

  /** object_info of every instance that answers (or has a cached copy); none: unavailable. */
  private async definitions(force: boolean): Promise<Record<string, unknown>[]> {
    const docs = await Promise.all(this.pool.instances.map((i) => i.objectInfo(force).catch(() => null)));
    const found = docs.filter((d): d is Record<string, unknown> => d !== null);
    if (found.length === 0) throw new EngineUnavailableError("No ComfyUI instance answered GET /object_info");
    return found;
  }

  /**
   * The classes of the instances that answer, waiting for one as a submission does (up to
   * unreachableGraceMs, then worker_lost): a run that starts, or takes a job over, while ComfyUI
   * restarts waits for it instead of failing its job. A hand-over stops the wait, and so does a
   * cancel, except for a resumed run (it still has to stop its prompt where ComfyUI runs it).
   */
  private async registryOnceReachable(options: ExecuteOptions): Promise<NodeRegistry> {
    const stops = [...(options.signal && !options.resumeOnly ? [options.signal] : []), ...(options.detach ? [options.detach] : [])];
    const halt = stops.length > 0 ? AbortSignal.any(stops) : undefined;
    const deadline = Date.now() + this.o.unreachableGraceMs;
    for (let wait = 250; ; wait = Math.min(wait * 2, 2000)) {
      try {
        return await this.registry(false);
      } catch (err) {
        if (!(err instanceof EngineUnavailableError)) throw err;
      }
      if (halt?.aborted) throw new ExecutionCancelledError();
      if (Date.now() + wait > deadline) {
        throw new EngineError({
          code: "worker_lost",
          message: "No ComfyUI instance answered to run this job.",
          node_id: null,
          class_type: null,
          traceback: null,
        });
      }
      await delay(wait, undefined, { signal: halt }).catch(() => undefined);
    }
  }

  private async registry(force: boolean): Promise<NodeRegistry> {
    const docs = await this.definitions(force);
    if (!this.merged || this.merged.docs.length !== docs.length || this.merged.docs.some((d, i) => d !== docs[i])) {
      this.merged = { docs, registry: registryOf(docs) };
    }
    return this.merged.registry;
  }
}

/** Step counts known from literal `steps` inputs, for progress weighting. */
function stepsOf(analysis: Analysis): Record<string, number> {
  const steps: Record<string, number> = {};
  for (const id of analysis.order) {
    const n = analysis.nodes.get(id)?.literals.steps;
    if (typeof n === "number" && Number.isInteger(n) && n > 0) steps[id] = n;
  }
  return steps;
}

function classTypesOf(graph: Record<string, unknown>): string[] {
  const out = new Set<string>();
  for (const node of Object.values(graph)) if (isPlainObject(node) && typeof node.class_type === "string") out.add(node.class_type);
  return [...out];
}

/** Whether the caller still holds the run (ExecuteOptions.holdsRun), asked again every 500 ms while it cannot tell, until `deadline`. */
async function stillHolds(options: ExecuteOptions, deadline: number): Promise<boolean> {
  if (!options.holdsRun) return true;
  for (;;) {
    try {
      return await options.holdsRun();
    } catch (err) {
      if (Date.now() >= deadline || options.signal?.aborted) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** Failures after which the prompt certainly was not queued, so it may go elsewhere. */
function isRetryable(err: unknown, phase: "inputs" | "post"): boolean {
  if (phase === "inputs") return err instanceof ComfyUnreachableError || (err instanceof ComfyHttpError && err.status >= 500);
  if (err instanceof ComfyUnreachableError) return err.notSent;
  // A full queue (flowgate's hosted /prompt answers 503 then) is worth waiting out.
  return err instanceof ComfyHttpError && (err.status === 503 || err.status === 429);
}

/** ComfyUI refused the prompt (its validation): the error keeps ComfyUI's node errors, and the job's error names the node and says why. */
function refusal(body: unknown): EngineValidationError {
  const v = validationOfComfy400(body);
  return new EngineValidationError(v, jobErrorOfRefusal(v));
}

function mapSubmitError(err: unknown, phase: "inputs" | "post"): unknown {
  if (err instanceof EngineError || err instanceof ExecutionCancelledError) return err;
  const fail = (code: "worker_lost" | "node_execution_error" | "invalid_input", message: string) =>
    new EngineError({ code, message, node_id: null, class_type: null, traceback: null }, { cause: err });
  if (err instanceof ComfyHttpError && phase === "post" && err.status === 400) return refusal(err.body);
  if (err instanceof ComfyHttpError && phase === "inputs" && err.status < 500)
    return fail("invalid_input", `ComfyUI refused an input file (HTTP ${err.status}).`);
  if (err instanceof ComfyHttpError && phase === "inputs") return fail("node_execution_error", `ComfyUI failed to store an input file (HTTP ${err.status}).`);
  if (err instanceof ComfyHttpError) return fail("node_execution_error", `ComfyUI refused the prompt (HTTP ${err.status}).`);
  if (err instanceof ComfyUnreachableError) return fail("worker_lost", "Lost contact with ComfyUI while submitting the prompt.");
  return err;
}
