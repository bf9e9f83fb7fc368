// The server's Prometheus metrics. Counters and histograms are updated where things happen (job
// events, store writes, HTTP responses); gauges are read at scrape time from their owners, so the
// hot paths pay nothing for them. No label holds a job id, key or other unbounded value: labels
// are statuses, route templates, node classes (bounded by the engine's registry), store
// operation names and configured ComfyUI URLs.
import { performance } from "node:perf_hooks";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { EventBus } from "../jobs/event-bus.ts";
import type { UpstreamHealth } from "../jobs/engine-port.ts";
import { isTerminalStatus, type Store } from "../store/index.ts";

/** Where the scrape-time gauges read their values; each is optional (tests, surfaces). */
export interface MetricSources {
  queueDepth(): number | Promise<number>;
  /** Seconds the oldest queued job has waited (0 when none). */
  oldestQueuedSeconds?(): number | Promise<number>;
  runningJobs(): number;
  openEventStreams?(): number;
  openWebSockets?(): number;
  upstreams?(): UpstreamHealth[];
  /** /readyz's checks and their result. */
  readiness?(): Promise<{ ready: boolean; checks: Record<string, boolean> }>;
  /** Free and total bytes of each volume the server writes to (`data`, `blobs`), and whether new data is refused for space. */
  storage?(): Promise<{ short: boolean; volumes: Array<{ volume: string; freeBytes: number; sizeBytes: number }> }>;
  /** Processes running jobs now (PostgreSQL: the deployment's, holding a live lease). */
  busyWorkers?(): Promise<number>;
}

/** What `flowgate_build_info` labels: this build and how it was started. */
export interface BuildInfo {
  version: string;
  surface: string;
  engine: string;
  store: "sqlite" | "postgres";
}

/** Store writes whose latency (commit and fsync) is measured. */
const STORE_WRITES = [
  "createJob",
  "claimIdempotencyKey",
  "releaseIdempotencyKey",
  "transitionJob",
  "transitionJobWithAssets",
  "updateProgress",
  "setLogs",
  "addAsset",
  "deleteAsset",
  "expireJobs",
  "purgeExpired",
] as const;

/** The scrape-time metrics of observeSources. */
const SOURCE_METRICS = [
  "flowgate_queue_depth",
  "flowgate_queue_oldest_seconds",
  "flowgate_jobs_running",
  "flowgate_sse_streams_open",
  "flowgate_websockets_open",
  "flowgate_comfyui_up",
  "flowgate_comfyui_reconnects_total",
  "flowgate_comfyui_output_folder",
  "flowgate_ready",
  "flowgate_readiness_check",
  "flowgate_storage_short",
  "flowgate_storage_free_bytes",
  "flowgate_storage_size_bytes",
  "flowgate_workers_busy",
];

const SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_SECONDS = [0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600];

/** Process metrics are per process: one registry, whatever the number of apps in it (tests). */
let processRegistry: Registry | null = null;

/** The metrics of one server. */
export class FlowgateMetrics {
  readonly registry = new Registry();
  /** HTTP requests by method, route template and status. */
  readonly httpDuration = new Histogram({
    name: "flowgate_http_request_duration_seconds",
    help: "HTTP requests by method, route template and status, and their duration.",
    labelNames: ["method", "route", "status"] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });
  private readonly jobsTotal = new Counter({
    name: "flowgate_jobs_total",
    help: "Jobs that entered each status since the server started.",
    labelNames: ["status"] as const,
    registers: [this.registry],
  });
  private readonly failures = new Counter({
    name: "flowgate_job_failures_total",
    help: "Jobs that failed since the server started, by error code (the contract's failure codes).",
    labelNames: ["code"] as const,
    registers: [this.registry],
  });
  private readonly orphanBlobs = new Counter({
    name: "flowgate_orphan_blobs_removed_total",
    help: "Blob files no record and no pending output named (left by a crash mid-upload), removed by the sweep.",
    registers: [this.registry],
  });
  private readonly queueWait = new Histogram({
    name: "flowgate_job_queue_seconds",
    help: "Time jobs waited in the queue before they started.",
    buckets: JOB_SECONDS,
    registers: [this.registry],
  });
  private readonly execution = new Histogram({
    name: "flowgate_job_execution_seconds",
    help: "Execution time of jobs that ran, by final status.",
    labelNames: ["status"] as const,
    buckets: JOB_SECONDS,
    registers: [this.registry],
  });
  private readonly nodeDuration = new Histogram({
    name: "flowgate_engine_node_duration_seconds",
    help: "Duration of executed (not cached) nodes, by node class.",
    labelNames: ["class_type"] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });
  private readonly storeCommit = new Histogram({
    name: "flowgate_store_commit_seconds",
    help: "Latency of store writes until durable (commit and fsync), by operation.",
    labelNames: ["operation"] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });
  /** Node start times of running jobs: job id to node id to performance.now(). */
  private readonly nodeStarts = new Map<string, Map<string, number>>();
  private stopObserving: () => void = () => undefined;

  constructor() {
    processRegistry ??= newProcessRegistry();
  }

  /** Registers the scrape-time gauges over `sources`. */
  observeSources(sources: MetricSources): void {
    const r = [this.registry];
    for (const name of SOURCE_METRICS) this.registry.removeSingleMetric(name); // a second app over the same runtime
    new Gauge({
      name: "flowgate_queue_depth",
      help: "Jobs waiting in the queue (on PostgreSQL, the deployment's, the same on every node).",
      registers: r,
      async collect() {
        // A read that fails (the database is away) leaves the last value.
        await Promise.resolve(sources.queueDepth()).then(
          (n) => this.set(n),
          () => undefined,
        );
      },
    });
    new Gauge({
      name: "flowgate_queue_oldest_seconds",
      help: "Seconds the oldest queued job has waited; 0 when the queue is empty.",
      registers: r,
      async collect() {
        await Promise.resolve(sources.oldestQueuedSeconds?.() ?? 0).then(
          (n) => this.set(n),
          () => undefined,
        );
      },
    });
    new Gauge({
      name: "flowgate_jobs_running",
      help: "Jobs running now.",
      registers: r,
      collect() {
        this.set(sources.runningJobs());
      },
    });
    new Gauge({
      name: "flowgate_sse_streams_open",
      help: "Open v2 event streams.",
      registers: r,
      collect() {
        this.set(sources.openEventStreams?.() ?? 0);
      },
    });
    new Gauge({
      name: "flowgate_websockets_open",
      help: "Open hosted-interface WebSockets.",
      registers: r,
      collect() {
        this.set(sources.openWebSockets?.() ?? 0);
      },
    });
    // One sample per ComfyUI instance, labelled by its URL, read at scrape time.
    const perUpstream = (name: string, help: string, value: (u: UpstreamHealth) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ["instance"] as const,
        registers: r,
        collect() {
          this.reset();
          for (const u of sources.upstreams?.() ?? []) this.set({ instance: u.url }, value(u));
        },
      });
    perUpstream("flowgate_comfyui_up", "Whether each ComfyUI instance is reachable (1) or not (0); absent with the embedded engine.", (u) =>
      u.reachable ? 1 : 0,
    );
    perUpstream(
      "flowgate_comfyui_output_folder",
      "Whether each ComfyUI instance's output files are read from its folder on this machine (1) or fetched with /view (0).",
      (u) => (u.outputFolder ? 1 : 0),
    );
    // Readiness as /readyz computes it: one gauge for all, one per check. The registry collects
    // its metrics at once, so each reads its own value.
    new Gauge({
      name: "flowgate_ready",
      help: "Whether /readyz answers ready (1) or not (0).",
      registers: r,
      async collect() {
        if (sources.readiness) this.set((await sources.readiness()).ready ? 1 : 0);
      },
    });
    new Gauge({
      name: "flowgate_readiness_check",
      help: "Each check of /readyz: passing (1) or not (0).",
      labelNames: ["check"] as const,
      registers: r,
      async collect() {
        if (!sources.readiness) return;
        for (const [check, pass] of Object.entries((await sources.readiness()).checks)) this.set({ check }, pass ? 1 : 0);
      },
    });
    new Gauge({
      name: "flowgate_storage_short",
      help: "Whether the data directory is short of space (1: new data refused, dispatch waits) or not (0).",
      registers: r,
      async collect() {
        if (sources.storage) this.set((await sources.storage()).short ? 1 : 0);
      },
    });
    const perVolume = (name: string, help: string, value: (v: { freeBytes: number; sizeBytes: number }) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ["volume"] as const,
        registers: r,
        async collect() {
          if (!sources.storage) return;
          for (const v of (await sources.storage()).volumes) this.set({ volume: v.volume }, value(v));
        },
      });
    perVolume("flowgate_storage_free_bytes", "Bytes free for the server on each volume it writes to (data, blobs).", (v) => v.freeBytes);
    perVolume("flowgate_storage_size_bytes", "Size in bytes of each volume the server writes to (data, blobs).", (v) => v.sizeBytes);
    new Gauge({
      name: "flowgate_workers_busy",
      help: "Processes running jobs now: on PostgreSQL the deployment's workers and dispatching API nodes holding a live lease; else this server while it runs one.",
      registers: r,
      async collect() {
        if (sources.busyWorkers)
          await sources.busyWorkers().then(
            (n) => this.set(n),
            () => undefined,
          );
      },
    });
    new Counter({
      name: "flowgate_comfyui_reconnects_total",
      help: "Reconnections of each ComfyUI instance's WebSocket.",
      labelNames: ["instance"] as const,
      registers: r,
      collect() {
        this.reset();
        for (const u of sources.upstreams?.() ?? []) this.inc({ instance: u.url }, u.reconnects);
      },
    });
  }

  /** Sets `flowgate_build_info` (always 1; its labels are the facts). */
  setBuildInfo(info: BuildInfo): void {
    this.registry.removeSingleMetric("flowgate_build_info");
    new Gauge({
      name: "flowgate_build_info",
      help: "This flowgate's version, the Node.js it runs on, its surface, engine and store (always 1).",
      labelNames: ["version", "node_version", "surface", "engine", "store"] as const,
      registers: [this.registry],
    }).set({ ...info, node_version: process.versions.node }, 1);
  }

  /** Follows job events: transitions, queue and execution times, node durations. */
  observeJobs(events: EventBus): void {
    this.stopObserving = events.subscribeAll((e) => {
      if (e.type === "status") {
        const job = e.job;
        this.jobsTotal.inc({ status: job.status });
        if (job.status === "failed") this.failures.inc({ code: job.error?.code ?? "unknown" });
        if (job.status === "running" && job.started_at !== null) this.queueWait.observe((job.started_at - job.created_at) / 1000);
        if (isTerminalStatus(job.status)) {
          this.nodeStarts.delete(job.id);
          if (job.started_at !== null && job.completed_at !== null) this.execution.observe({ status: job.status }, (job.completed_at - job.started_at) / 1000);
        }
      } else if (e.type === "node_start") {
        let starts = this.nodeStarts.get(e.job_id);
        if (!starts) this.nodeStarts.set(e.job_id, (starts = new Map()));
        starts.set(e.node_id, performance.now());
      } else if (e.type === "node_done") {
        const starts = this.nodeStarts.get(e.job_id);
        const at = starts?.get(e.node_id);
        if (at === undefined) return;
        starts!.delete(e.node_id);
        this.nodeDuration.observe({ class_type: e.class_type }, (performance.now() - at) / 1000);
      }
    });
  }

  /** Counts blob files the orphan sweep removed. */
  orphanBlobsRemoved(n: number): void {
    if (n > 0) this.orphanBlobs.inc(n);
  }

  /**
   * Times the store's writes until they resolve (durable). The methods are replaced on the
   * instance itself, bound to it: reads keep their direct calls, and any Store works.
   */
  instrumentStore<S extends Store>(store: S): S {
    const table = store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    for (const name of STORE_WRITES) {
      const write = table[name]!.bind(store);
      const child = this.storeCommit.labels(name);
      table[name] = (...args: unknown[]) => {
        const start = performance.now();
        const done = () => child.observe((performance.now() - start) / 1000);
        const result = write(...args);
        result.then(done, done);
        return result;
      };
    }
    return store;
  }

  /** The exposition text: this server's metrics and the process's. */
  async render(): Promise<string> {
    return (await this.registry.metrics()) + (await processRegistry!.metrics());
  }

  /** The content type of render()'s text. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops following job events. */
  close(): void {
    this.stopObserving();
    this.nodeStarts.clear();
  }
}

function newProcessRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
