// The embedded CPU engine: the built-in node library, validation, and a result cache shared
// by every run of this engine instance.
import type { AssetResolver, Engine, ExecuteOptions, ExecuteResult, UploadResolver } from "./engine.ts";
import { EngineError, type JobError } from "./errors.ts";
import { runGraph, type CachedResult } from "./executor.ts";
import { ByteLruCache } from "./lru-cache.ts";
import { releaseDeadStorage } from "./media/shared-storage.ts";
import type { NodeDefinition } from "./node-spec.ts";
import { builtinNodes, createRegistry, type NodeRegistry } from "./nodes/registry.ts";
import { objectInfo, type ObjectInfo } from "./object-info.ts";
import { analyzeGraph, describeErrors, validationResult, type ValidationResult } from "./validate.ts";
import { cloneJson } from "../domain/exact-json.ts";

/** Construction options of the embedded engine. */
export interface EmbeddedEngineOptions {
  /** Upper bound of the node result cache in bytes (default 256 MiB); least recently used goes first. */
  cacheBytes?: number;
  /** Upper bound of the number of cached node results (default 10,000). */
  cacheEntries?: number;
  /** The partner vendor endpoint FlowgatePartnerCall posts to; null disables partner nodes. */
  partnerUrl?: string | null;
  /** Default resolvers; the ones given to execute() take precedence (they are per caller). */
  resolveAsset?: AssetResolver;
  resolveUpload?: UploadResolver;
  /** HTTP client for partner calls (default: global fetch). */
  fetch?: typeof fetch;
  /** Time limit of one partner call (default 60 s). */
  partnerTimeoutMs?: number;
  /** Nodes of one run that may be in flight at once (default 8). */
  maxConcurrency?: number;
  /** Tensor bytes one run may hold at once (default 1 GiB): larger graphs are refused or fail out_of_memory. */
  jobMemoryBytes?: number;
  /** Long node loops yield to the event loop after this much work, in ms (default 10; 0 yields at every checkpoint). */
  yieldEveryMs?: number;
  /** Extra node classes, added to the built-in library. */
  extraNodes?: readonly NodeDefinition[];
  /** Clock for %date% variables in file names. */
  now?: () => Date;
}

/** The default per-run memory budget: 1 GiB. */
export const DEFAULT_JOB_MEMORY = 2 ** 30;

/** execute() was given a graph that does not validate; carries the validation result. */
export class EngineValidationError extends EngineError {
  readonly validation: ValidationResult;

  /** `jobError`: the job's error when another one than the summary fits (a node ComfyUI named). */
  constructor(validation: ValidationResult, jobError?: JobError) {
    super(jobError ?? { code: "invalid_input", message: describeErrors(validation), node_id: null, class_type: null, traceback: null });
    this.name = "EngineValidationError";
    this.validation = validation;
  }
}

/** The built-in CPU engine. */
export class EmbeddedEngine implements Engine {
  readonly kind = "embedded";
  private readonly registry: NodeRegistry;
  private readonly cache: ByteLruCache<CachedResult>;
  private readonly info: ObjectInfo;

  private readonly options: EmbeddedEngineOptions;

  constructor(options: EmbeddedEngineOptions = {}) {
    this.options = options;
    this.registry = createRegistry([...builtinNodes, ...(options.extraNodes ?? [])]);
    this.cache = new ByteLruCache<CachedResult>(options.cacheBytes ?? 256 * 1024 * 1024, options.cacheEntries ?? 10_000);
    this.info = objectInfo(this.registry);
  }

  /** object_info, synchronously (a fresh copy each call). */
  nodeDefinitionsSync(): ObjectInfo {
    return cloneJson(this.info);
  }

  /** object_info. */
  async nodeDefinitions(): Promise<ObjectInfo> {
    return this.nodeDefinitionsSync();
  }

  /** The per-run memory budget in bytes. */
  get jobMemoryBytes(): number {
    return this.options.jobMemoryBytes ?? DEFAULT_JOB_MEMORY;
  }

  /** Validation, synchronously. */
  validateSync(graph: unknown): ValidationResult {
    return validationResult(analyzeGraph(graph, this.registry, { jobMemoryBytes: this.jobMemoryBytes }));
  }

  /** Validation. */
  async validate(graph: unknown): Promise<ValidationResult> {
    return this.validateSync(graph);
  }

  /**
   * Runs a graph; see Engine.execute. Before it settles, the storage of the tensors the run no
   * longer holds is freed when it allocated much (media/shared-storage.ts): a job's end finds the
   * process back to what it holds for other runs and the cache.
   */
  async execute(graph: unknown, options: ExecuteOptions = {}): Promise<ExecuteResult> {
    const analysis = analyzeGraph(graph, this.registry, { jobMemoryBytes: this.jobMemoryBytes });
    if (analysis.issues.length > 0) throw new EngineValidationError(validationResult(analysis));
    try {
      return await this.run(analysis, options);
    } finally {
      await releaseDeadStorage();
    }
  }

  private run(analysis: ReturnType<typeof analyzeGraph>, options: ExecuteOptions): Promise<ExecuteResult> {
    return runGraph(analysis, options, {
      cache: this.cache,
      partnerUrl: this.options.partnerUrl ?? null,
      fetch: this.options.fetch ?? globalThis.fetch,
      partnerTimeoutMs: this.options.partnerTimeoutMs ?? 60_000,
      maxConcurrency: this.options.maxConcurrency ?? 8,
      jobMemoryBytes: this.jobMemoryBytes,
      yieldEveryMs: this.options.yieldEveryMs ?? 10,
      resolveAsset: this.options.resolveAsset,
      resolveUpload: this.options.resolveUpload,
      now: this.options.now,
    });
  }

  /** Cache occupancy, for metrics. */
  cacheStats(): { entries: number; bytes: number; maxBytes: number } {
    return { entries: this.cache.size, bytes: this.cache.bytes, maxBytes: this.cache.maxBytes };
  }

  /** Drops every cached node result. */
  clearCache(): void {
    this.cache.clear();
  }
}
