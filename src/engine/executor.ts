// One run of a validated graph: resolve file inputs, compute cache keys, report cached nodes,
// re-emit cached outputs, then run the rest in dependency order, several nodes at a time so
// that branches waiting on I/O overlap.
import type { AssetRef } from "./asset-refs.ts";
import type { AssetResolver, EngineOutput, ExecuteOptions, ExecuteResult, UiDict, UploadResolver } from "./engine.ts";
import { EngineError, ExecutionCancelledError, isAbortError, NodeInputError, toJobError } from "./errors.ts";
import { FileNamer } from "./filenames.ts";
import type { ByteLruCache } from "./lru-cache.ts";
import type { NodeContext, NodeFile, ResolvedFile } from "./node-spec.ts";
import { RunMemory, withinNode } from "./run-scope.ts";
import { nodeSignature } from "./signature.ts";
import type { Analysis, FileRef, PreparedNode } from "./validate.ts";
import { estimateBytes } from "./value-size.ts";

/** What the cache keeps per node: link outputs, ui dict and files (re-emitted on a cached run). */
export interface CachedResult {
  outputs: unknown[];
  ui: UiDict | null;
  files: NodeFile[];
}

/** Engine-wide settings a run needs. */
export interface RunConfig {
  cache: ByteLruCache<CachedResult>;
  partnerUrl: string | null;
  fetch: typeof fetch;
  partnerTimeoutMs: number;
  maxConcurrency: number;
  /** Tensor bytes one run may hold and allocate at once (RunMemory). */
  jobMemoryBytes: number;
  /** Long node loops yield to the event loop after this many milliseconds of work. */
  yieldEveryMs: number;
  resolveAsset?: AssetResolver;
  resolveUpload?: UploadResolver;
  now?: () => Date;
}

/** A callback's own error, passed through execute() unchanged. */
class CallbackFailure {
  readonly error: unknown;
  constructor(error: unknown) {
    this.error = error;
  }
}

/** Marks work abandoned because the run already ended (cancel, timeout, another failure). */
class RunStopped {}

/**
 * Why a finished run's signal aborts (stragglers drop their results): one shared AbortError, as
 * `abort()` without a reason builds a new DOMException, stack included, at every run's end.
 */
const RUN_ENDED = new DOMException("The run ended", "AbortError");

type Callback = "onStart" | "onCached" | "onNodeStart" | "onNodeDone" | "onOutput";
type Notification = "onProgress" | "onPreview" | "onLog";

/** Runs an analysed, valid graph. */
export function runGraph(analysis: Analysis, options: ExecuteOptions, config: RunConfig): Promise<ExecuteResult> {
  return new Run(analysis, options, config).start();
}

class Run {
  private readonly controller = new AbortController();
  private closed = false;
  private stopped = false;
  private readonly running = new Set<string>();
  private readonly namer: FileNamer;
  private readonly secrets: string[];
  private readonly result: ExecuteResult = { executed: [], cached: [], outputs: [], ui: {} };
  private readonly volatile = new Set<string>();
  private readonly memory: RunMemory;
  private reject: (err: unknown) => void = () => {};

  private readonly analysis: Analysis;
  private readonly options: ExecuteOptions;
  private readonly config: RunConfig;

  constructor(analysis: Analysis, options: ExecuteOptions, config: RunConfig) {
    this.analysis = analysis;
    this.options = options;
    this.config = config;
    this.namer = new FileNamer(config.now);
    this.memory = new RunMemory(config.jobMemoryBytes);
    const key = options.extra?.api_key_vendor_org;
    this.secrets = typeof key === "string" && key.length > 0 ? [key] : [];
  }

  start(): Promise<ExecuteResult> {
    const external = this.options.signal;
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => this.stop(new ExecutionCancelledError(this.firstRunning()?.id ?? null));
    return new Promise<ExecuteResult>((resolve, reject) => {
      this.reject = reject;
      if (external?.aborted) return this.stop(new ExecutionCancelledError());
      external?.addEventListener("abort", onAbort, { once: true });
      if (this.options.timeoutMs !== undefined) timer = setTimeout(() => this.stop(this.timeoutError()), this.options.timeoutMs);
      this.main().then(
        () => {
          if (this.closed) return;
          this.closed = true;
          resolve(this.result);
        },
        (err: unknown) => this.stop(err),
      );
    }).finally(() => {
      external?.removeEventListener("abort", onAbort);
      clearTimeout(timer);
      // Stragglers see the abort at their next boundary; their results are dropped.
      this.controller.abort(RUN_ENDED);
    });
  }

  /** Ends the run once: rejects with the error, aborts what is still running. */
  private stop(err: unknown): void {
    if (err instanceof RunStopped || this.closed) return;
    this.closed = true;
    this.stopped = true;
    this.controller.abort();
    this.reject(err instanceof CallbackFailure ? err.error : err);
  }

  private firstRunning(): PreparedNode | undefined {
    const id = this.running.values().next().value;
    return id === undefined ? undefined : this.analysis.nodes.get(id);
  }

  private timeoutError(): EngineError {
    const node = this.firstRunning();
    return new EngineError({
      code: "timeout",
      message: `The run exceeded its time limit of ${this.options.timeoutMs} ms`,
      node_id: node?.id ?? null,
      class_type: node?.class_type ?? null,
      traceback: null,
    });
  }

  private throwIfStopped(): void {
    if (this.stopped) throw new RunStopped();
  }

  /** Calls a lifecycle callback and waits for it; a throw becomes the run's error. */
  private async call<K extends Callback>(name: K, arg: Parameters<NonNullable<ExecuteOptions[K]>>[0]): Promise<void> {
    this.throwIfStopped();
    const fn = this.options[name] as ((a: typeof arg) => void | Promise<void>) | undefined;
    if (!fn) return;
    try {
      await fn.call(this.options, arg);
    } catch (err) {
      throw new CallbackFailure(err);
    }
    this.throwIfStopped();
  }

  /** Calls a notification callback without waiting; its failures never fail the run. */
  private notify<K extends Notification>(name: K, arg: Parameters<NonNullable<ExecuteOptions[K]>>[0]): void {
    if (this.closed) return;
    const fn = this.options[name] as ((a: typeof arg) => void | Promise<void>) | undefined;
    if (!fn) return;
    try {
      const r = fn.call(this.options, arg);
      if (r && typeof (r as Promise<void>).catch === "function") (r as Promise<void>).catch(() => {});
    } catch {
      // Progress and log sinks are best effort.
    }
  }

  private async main(): Promise<void> {
    const { nodes, order, outputs } = this.analysis;
    const resolved = new Map<string, Record<string, ResolvedFile>>();
    const keys = new Map<string, string>();
    for (const id of order) {
      const node = nodes.get(id)!;
      // Uncacheable nodes (partner calls) and everything downstream of them are never stored.
      if (node.def.cacheable === false || Object.values(node.links).some((l) => this.volatile.has(l.from))) this.volatile.add(id);
      const files: Record<string, ResolvedFile> = {};
      for (const [input, ref] of Object.entries(node.files)) files[input] = await this.resolveFile(node, input, ref);
      resolved.set(id, files);
      const hashes = Object.fromEntries(Object.entries(files).map(([k, f]) => [k, f.hash]));
      keys.set(id, nodeSignature(node, keys, hashes));
    }

    const values = new Map<string, unknown[]>();
    const hits = new Map<string, CachedResult>();
    for (const id of order) {
      const hit = this.config.cache.get(keys.get(id)!);
      if (hit) {
        hits.set(id, hit);
        values.set(id, hit.outputs);
      }
    }
    // Only what an uncached output needs runs; a cached node's ancestors are not needed for it.
    const needed = new Set<string>();
    const stack = outputs.filter((o) => !hits.has(o));
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (needed.has(id)) continue;
      needed.add(id);
      for (const link of Object.values(nodes.get(id)!.links)) if (!hits.has(link.from)) stack.push(link.from);
    }
    const toRun = order.filter((id) => needed.has(id));
    const cached = order.filter((id) => hits.has(id));
    this.result.cached = cached;
    // Cached values the run reads count against its budget too, so whether a job fits never depends on the cache.
    const read = new Set(toRun.flatMap((id) => Object.values(nodes.get(id)!.links).map((l) => l.from)));
    for (const id of cached) if (read.has(id)) this.memory.hold(hits.get(id)!.outputs);

    await this.call("onStart", { nodes: toRun, cached, steps: this.knownSteps(toRun) });
    await this.call("onCached", [...cached]);
    // A job must always deliver its outputs: cached output nodes re-emit their files.
    for (const id of outputs) {
      const hit = hits.get(id);
      if (hit) await this.emit(nodes.get(id)!, hit.ui, hit.files, true);
    }
    await this.schedule(toRun, values, resolved, keys);
  }

  private knownSteps(ids: string[]): Record<string, number> {
    const steps: Record<string, number> = Object.create(null); // keyed by client node ids
    for (const id of ids) {
      const node = this.analysis.nodes.get(id)!;
      const input = node.def.stepsInput;
      const value = input ? node.literals[input] : undefined;
      if (typeof value === "number") steps[id] = value;
    }
    return steps;
  }

  private async resolveFile(node: PreparedNode, input: string, ref: FileRef): Promise<ResolvedFile> {
    this.throwIfStopped();
    const fail = (message: string) => new EngineError(toJobError(new NodeInputError(message), { node_id: node.id, class_type: node.class_type }, this.secrets));
    if (ref.kind === "upload") {
      const resolver = this.options.resolveUpload ?? this.config.resolveUpload;
      if (!resolver) throw fail(`Uploaded files cannot be read here: ${ref.name}`);
      let found: { bytes: Buffer; hash: string } | null;
      try {
        found = await resolver(ref.name);
      } catch {
        throw fail(`The upload ${ref.name} given to input '${input}' could not be read`);
      }
      this.throwIfStopped();
      if (!found) throw fail(`Invalid image file: ${ref.name}`);
      return { source: "upload", name: ref.name, bytes: found.bytes, hash: found.hash };
    }
    const resolver = this.options.resolveAsset ?? this.config.resolveAsset;
    if (!resolver) throw fail(`Assets cannot be read here: ${ref.ref.id}`);
    let asset: { bytes: Buffer; hash: string };
    try {
      asset = await resolver(ref.ref as AssetRef);
    } catch {
      throw fail(`The asset ${ref.ref.id} given to input '${input}' could not be read`);
    }
    this.throwIfStopped();
    return { source: "asset", name: ref.ref.file_path ?? ref.ref.id, bytes: asset.bytes, hash: asset.hash };
  }

  private schedule(
    toRun: string[],
    values: Map<string, unknown[]>,
    resolved: Map<string, Record<string, ResolvedFile>>,
    keys: Map<string, string>,
  ): Promise<void> {
    const { nodes } = this.analysis;
    const position = new Map(toRun.map((id, i) => [id, i]));
    const waiting = new Map<string, number>();
    const consumers = new Map<string, string[]>();
    const uses = new Map<string, number>();
    for (const id of toRun) {
      const sources = [...new Set(Object.values(nodes.get(id)!.links).map((l) => l.from))];
      waiting.set(id, sources.filter((s) => position.has(s)).length);
      for (const s of sources) {
        consumers.set(s, [...(consumers.get(s) ?? []), id]);
        uses.set(s, (uses.get(s) ?? 0) + 1);
      }
    }
    const ready = toRun.filter((id) => waiting.get(id) === 0);
    const max = Math.max(1, this.config.maxConcurrency);
    let active = 0;
    let done = 0;
    return new Promise<void>((resolve, reject) => {
      const pump = () => {
        if (this.closed) return;
        if (done === toRun.length) return resolve();
        while (active < max && ready.length > 0) {
          const id = ready.shift()!;
          active++;
          this.runNode(nodes.get(id)!, values, resolved.get(id) ?? {}, keys.get(id)!).then(() => {
            active--;
            done++;
            for (const c of consumers.get(id) ?? []) {
              const left = waiting.get(c)! - 1;
              waiting.set(c, left);
              if (left === 0) {
                // Keep the ready queue in plan order, so runs are reproducible.
                const at = ready.findIndex((r) => position.get(r)! > position.get(c)!);
                ready.splice(at === -1 ? ready.length : at, 0, c);
              }
            }
            // Release upstream values no one still needs (the cache may keep its own reference).
            for (const s of new Set(Object.values(nodes.get(id)!.links).map((l) => l.from))) {
              const left = uses.get(s)! - 1;
              uses.set(s, left);
              if (left === 0) {
                this.memory.release(values.get(s) ?? []);
                values.delete(s);
              }
            }
            pump();
          }, reject);
        }
      };
      pump();
    });
  }

  private async runNode(node: PreparedNode, values: Map<string, unknown[]>, files: Record<string, ResolvedFile>, key: string): Promise<void> {
    this.throwIfStopped();
    this.running.add(node.id);
    try {
      await this.call("onNodeStart", { node_id: node.id, class_type: node.class_type });
      const inputs: Record<string, unknown> = { ...node.literals, ...files };
      for (const [name, link] of Object.entries(node.links)) inputs[name] = values.get(link.from)?.[link.index];
      let produced;
      const ctx = this.contextFor(node);
      const lease = { charged: 0 };
      try {
        produced = await withinNode({ memory: this.memory, lease, checkpoint: ctx.checkpoint }, () => node.def.run(ctx, inputs));
        this.throwIfStopped();
        const outputs = produced.result ?? [];
        if (outputs.length !== node.def.output.length) {
          throw new Error(`${node.class_type} returned ${outputs.length} values for ${node.def.output.length} outputs`);
        }
      } catch (err) {
        throw this.nodeFailure(err, node);
      } finally {
        // What the node allocated is garbage now, but for what it returned, which is held instead.
        this.memory.settle(lease);
      }
      const outputs = produced.result ?? [];
      const entry: CachedResult = { outputs, ui: produced.ui ?? null, files: produced.files ?? [] };
      values.set(node.id, outputs);
      this.memory.hold(outputs);
      if (!this.volatile.has(node.id)) this.config.cache.set(key, entry, estimateBytes(entry));
      this.result.executed.push(node.id);
      await this.emit(node, entry.ui, entry.files, false);
    } finally {
      this.running.delete(node.id);
    }
  }

  private nodeFailure(err: unknown, node: PreparedNode): unknown {
    if (err instanceof CallbackFailure || err instanceof RunStopped) return err;
    if (this.stopped || (isAbortError(err) && this.controller.signal.aborted)) return new RunStopped();
    return new EngineError(toJobError(err, { node_id: node.id, class_type: node.class_type }, this.secrets));
  }

  /** Names files, delivers each through onOutput (awaited), then reports the node done with its ui. */
  private async emit(node: PreparedNode, nodeUi: UiDict | null, files: NodeFile[], cached: boolean): Promise<void> {
    const ui: UiDict = {};
    for (const [k, v] of Object.entries(nodeUi ?? {})) ui[k] = [...v];
    let named;
    try {
      named = files.map((file) => ({ file, ...this.namer.allocate(file) }));
    } catch (err) {
      throw this.nodeFailure(err, node);
    }
    for (const { file, name, subfolder } of named) {
      if (file.uiKey) (ui[file.uiKey] ??= []).push({ filename: name, subfolder, type: file.folder });
      const output: EngineOutput = {
        node_id: node.id,
        class_type: node.class_type,
        name,
        subfolder,
        type: file.type,
        content_type: file.content_type,
        data: file.data,
        folder: file.folder,
      };
      await this.call("onOutput", output);
      const { data, ...summary } = output;
      this.result.outputs.push({ ...summary, size_bytes: data.length });
    }
    const finalUi = Object.keys(ui).length > 0 ? ui : null;
    if (finalUi) this.result.ui[node.id] = finalUi;
    await this.call("onNodeDone", { node_id: node.id, class_type: node.class_type, ui: finalUi, cached });
  }

  private contextFor(node: PreparedNode): NodeContext {
    const signal = this.controller.signal;
    const cancelled = () => new ExecutionCancelledError(node.id);
    const key = this.options.extra?.api_key_vendor_org;
    let lastYield = performance.now();
    return {
      node_id: node.id,
      class_type: node.class_type,
      signal,
      throwIfAborted: () => {
        if (signal.aborted) throw cancelled();
      },
      sleep: (ms) =>
        new Promise<void>((resolve, reject) => {
          if (signal.aborted) return reject(cancelled());
          const timer = setTimeout(() => {
            signal.removeEventListener("abort", onAbort);
            resolve();
          }, ms);
          const onAbort = () => {
            clearTimeout(timer);
            reject(cancelled());
          };
          signal.addEventListener("abort", onAbort, { once: true });
        }),
      checkpoint: async () => {
        if (signal.aborted) throw cancelled();
        // Long loops give the event loop (other runs, HTTP, the abort itself) a turn every ~10 ms.
        if (performance.now() - lastYield < this.config.yieldEveryMs) return;
        await new Promise<void>((resolve) => setImmediate(resolve));
        lastYield = performance.now();
        if (signal.aborted) throw cancelled();
      },
      progress: (value, max) => this.notify("onProgress", { node_id: node.id, value, max }),
      preview: (jpeg) => this.notify("onPreview", { node_id: node.id, content_type: "image/jpeg", data: jpeg }),
      log: (text) => this.notify("onLog", { node_id: node.id, text }),
      partner: node.def.api_node
        ? {
            url: this.config.partnerUrl,
            apiKey: typeof key === "string" && key.length > 0 ? key : null,
            fetch: this.config.fetch,
            timeoutMs: this.config.partnerTimeoutMs,
          }
        : null,
    };
  }
}
