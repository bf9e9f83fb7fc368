// What every scenario receives: the sizes of this run, a scratch directory and a log.

/** Sizes and durations of one run; `--quick` shrinks every one of them. */
export interface Sizes {
  /** Measured rounds per HTTP load figure (the median is reported). */
  httpRounds: number;
  /** Seconds per autocannon run (autocannon runs at least about 1 s). */
  httpDurationS: number;
  /** Seconds of the discarded warm-up run of each endpoint; 0 = none. */
  httpWarmupS: number;
  /** autocannon connections. */
  connections: number;
  /** Jobs queued in the deep-queue server. */
  queueDepth: number;
  /** Open event streams on one job. */
  sseStreams: number;
  sseRounds: number;
  /** Open event streams on one job of the PostgreSQL scenario's API node. */
  pgStreams: number;
  /** Rounds of the PostgreSQL scenario's fan-out (each: the cross-process one and its baseline). */
  pgStreamRounds: number;
  /** Rounds of the PostgreSQL scenario's dispatch latency (flowgate and graphile-worker in turn). */
  dispatchRounds: number;
  /** Jobs per tool per dispatch latency round, each submitted once the previous one ended. */
  dispatchJobs: number;
  /** Jobs queued before the workers start, per completion-rate run. */
  drainJobs: number;
  /** Rounds of the completion rates (each: one and two workers, flowgate and graphile-worker). */
  drainRounds: number;
  /** Nodes of the engine graphs. */
  engineNodes: number;
  /** Timed repetitions per engine figure. */
  engineRounds: number;
  /** Discarded, then timed, rounds of the ComfyUI backend's job (each: straight to the upstream and through flowgate). */
  comfyuiWarmupRounds: number;
  comfyuiRounds: number;
  hashMiB: number;
  hashRounds: number;
  /** Jobs in the store of the label-filter scenario, and its rounds. */
  labelJobs: number;
  labelRounds: number;
  /** Size of the blob each round of the blob-store scenario stores and fetches, and its rounds. */
  blobMiB: number;
  blobRounds: number;
  /** Completed jobs per memory phase. */
  memoryJobs: number;
}

export const FULL: Sizes = {
  httpRounds: 5,
  httpDurationS: 5,
  httpWarmupS: 2,
  connections: 16,
  queueDepth: 100_000,
  sseStreams: 10_000,
  sseRounds: 3,
  pgStreams: 1000,
  pgStreamRounds: 5,
  dispatchRounds: 5,
  dispatchJobs: 200,
  drainJobs: 2_000,
  drainRounds: 3,
  engineNodes: 1000,
  engineRounds: 41,
  comfyuiWarmupRounds: 150,
  comfyuiRounds: 201,
  hashMiB: 256,
  hashRounds: 5,
  labelJobs: 100_000,
  labelRounds: 7,
  blobMiB: 64,
  blobRounds: 5,
  memoryJobs: 10_000,
};

export const QUICK: Sizes = {
  httpRounds: 2,
  httpDurationS: 1,
  httpWarmupS: 0,
  connections: 8,
  queueDepth: 1_000,
  sseStreams: 100,
  sseRounds: 2,
  pgStreams: 100,
  pgStreamRounds: 2,
  dispatchRounds: 2,
  dispatchJobs: 15,
  drainJobs: 60,
  drainRounds: 1,
  engineNodes: 100,
  engineRounds: 5,
  comfyuiWarmupRounds: 3,
  comfyuiRounds: 5,
  hashMiB: 8,
  hashRounds: 2,
  labelJobs: 10_000,
  labelRounds: 3,
  blobMiB: 8,
  blobRounds: 2,
  memoryJobs: 100,
};

export interface BenchContext {
  quick: boolean;
  sizes: Sizes;
  /** Scratch directory for data dirs (removed at the end). */
  tmpRoot: string;
  log(message: string): void;
  /** Things a reader of the results must know (errors, non-2xx answers, reduced sizes). */
  warn(message: string): void;
}
