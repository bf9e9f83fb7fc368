// Where the dispatcher's jobs come from: this process's own queue (LocalJobSource) or the
// shared database under leases (LeasedJobSource). The dispatcher keeps the slots, launches the
// runs and stops them; a source decides which job starts next, moves it out of `queued`, answers
// queue positions, and recovers or releases what a process held.
import type { JobRecord, JsonObject, RunFence, Store } from "../store/index.ts";
import type { EventBus } from "./event-bus.ts";
import type { FairQueue } from "./fair-queue.ts";
import type { QueuedRunHooks } from "./job-run.ts";

/** Per-submission secrets (`extra_data`), held in memory only. */
export type JobSecrets = { api_key_vendor_org?: string };

/** A job a source hands to the dispatcher to run. */
export interface RunStart {
  job: JobRecord;
  /** The claim the run writes under (leases); absent: no fence. */
  fence?: RunFence;
  /** Set for a job that stays `queued` until the engine reports it running (an engine with its own queue). */
  hooks?: QueuedRunHooks;
  /** A cancel came while its start was being committed: the run starts aborted. */
  aborted?: boolean;
  /** A run an earlier process started, which the engine follows to its end (EnginePort.resumesRuns). */
  resume?: boolean;
  /** The job's graph, when the source read it with the job (the run then reads none). */
  workflow?: JsonObject;
}

/** What a source reads of its process: the store, the live events, the clock, the log, the tiers. */
export interface SourceEnv {
  store: Store;
  events: EventBus;
  now: () => number;
  log?: ((line: string) => void) | undefined;
  /** Jobs of one owner that may run at once (cloud tiers); unlimited when absent. */
  slotsFor?: ((owner: string) => Promise<number>) | undefined;
}

/**
 * The jobs waiting in this process, in start order (with leases: those this node knows), as a
 * source reads them and takes them out; the dispatcher alone adds them and counts the runs.
 */
export type WaitingJobs = Pick<FairQueue, "size" | "entries" | "heads" | "position" | "waiting" | "running" | "remove">;

/** Which jobs of this process have secrets here, and the drop of those of a job that left; the values stay with the dispatcher. */
export interface HeldSecrets {
  readonly size: number;
  has(jobId: string): boolean;
  keys(): Iterable<string>;
  delete(jobId: string): boolean;
}

/** The dispatcher's runs, as a source steers them. */
export interface RunControl {
  /** Ids of the jobs this process runs now. */
  runningIds(): string[];
  /** Slots free for another run now. */
  freeSlots(): number;
  /** Whether this process runs the job now. */
  runs(jobId: string): boolean;
  /** Stops a run of this process, if it has one for the job. */
  abortRun(jobId: string): void;
  /** Stops following a run of this process, leaving its work in the engine (another process took the job over). */
  detachRun(jobId: string): void;
  /**
   * Runs a job taken over from a dead process's lease now, free slot or not (its work is in the
   * engine already, or was to be); false when this process no longer starts runs (a stop).
   */
  adopt(start: RunStart): boolean;
  /** Asks for a fill of the free slots. */
  pump(): void;
  /**
   * The ends of these runs are being written with a claim riding them (JobFeed.ridesEnds): frees
   * the slots they held and reserves the free ones for that claim; how many (0: no claim rides,
   * the free slots are the fills' again). Each reservation is given back once (`rideAnswered`).
   */
  rideEnds(jobIds: readonly string[]): number;
  /** The claim for `slots` reserved slots answered: they are the fills' again (its jobs launched first). */
  rideAnswered(slots: number): void;
  /**
   * Runs a job this worker claimed, its graph waiting for a free slot: one a claim riding the runs'
   * ends took (perhaps ahead of the slots), or one read back after a claim's answer was lost. A
   * fill launches its own, each for a free slot.
   */
  run(start: RunStart): void;
}

/** What a source sees of its dispatcher: the process, the waiting jobs, the secrets held, the runs. */
export interface SourceHost extends SourceEnv, RunControl {
  queue: WaitingJobs;
  secrets: HeldSecrets;
  /**
   * Waiting jobs whose ids this process made as it accepted them (JobQueue.enqueue's `newId`), on
   * a queue no other process runs: no process has handed them to an engine yet. A start takes its
   * job's id out.
   */
  newIds: { delete(jobId: string): boolean };
}

/** What the source of this process's own queue needs: it steers no run, it only asks whether one runs. */
export type LocalSourceHost = SourceEnv & Pick<RunControl, "runs"> & Pick<SourceHost, "queue" | "secrets" | "newIds">;

/*
 * The queue the dispatcher starts jobs from, split by who in the dispatcher calls what: its
 * start and stop (SourceLifecycle), its fills and runs (JobFeed), the job service's changes to
 * the queue (QueueNotices), and the counts it answers for the service, metrics and sockets
 * (QueueCounts). Each part of the dispatcher holds the source under the one it needs.
 */

/** The dispatcher's start and stop, as a source follows them. */
export interface SourceLifecycle {
  /** Begins: recovers what a dead process left, or joins the shared queue. */
  start(): Promise<void>;
  /** Stops the source's own timers (the runs have settled). */
  stop(): void;
  /** Gives up, at a stop, the jobs this process held (`ids`: its unfinished runs and secret jobs). */
  release(ids: readonly string[]): Promise<void>;
}

/** What the dispatcher's fills and runs ask of a source. */
export interface JobFeed {
  /** Whether a store write of the source is failing (and being retried): readiness reports it. */
  readonly failing: boolean;
  /** Whether a fill should look for work now. */
  wantsWork(): boolean;
  /**
   * Whether the next jobs are claimed with the ends of the runs that free their slots (one
   * statement for both): a run whose engine is done then keeps its slot until its end is written.
   */
  readonly ridesEnds: boolean;
  /**
   * Takes the next job, moves it out of `queued` as its run needs, and hands it to `launch` in the
   * same turn (a cancel must find it starting or running, never between); true when the fill
   * should look again (a job started, or left meanwhile), false when none can start now. Rejects
   * when the store refused the start: the job keeps its place.
   */
  startNext(launch: (start: RunStart) => void): Promise<boolean>;
  /** Asks a job whose start is being committed to start aborted; false when none is. */
  abortStarting(jobId: string): boolean;
  /** A run of this process ended. */
  runEnded(jobId: string): void;
}

/** Changes to the queue the dispatcher passes on (from the job service, the reaper, other processes). */
export interface QueueNotices {
  /** A queued job left the queue (cancel, expiry): whether its run waits in the engine's queue and must be stopped. */
  dequeued(jobId: string): boolean;
  /** The queue moved (here or in another process). */
  changed(): void;
}

/** The queue's positions and counts, which the dispatcher answers for the job service, metrics and sockets. */
export interface QueueCounts {
  /** Whether several processes share the queue (this node's queue is then only what it knows). */
  readonly shared: boolean;
  /**
   * Jobs or engine work ahead of a queued job (0: next to start); null when it is not queued
   * (`read`: the job's record as the store just read it, which may spare a round trip).
   */
  position(jobId: string, read?: JobRecord): Promise<number | null>;
  /** The position of a job this process has just queued. */
  positionOfNew(job: JobRecord): Promise<number | null>;
  /** An owner's jobs waiting or running. */
  liveCount(owner: string): Promise<number>;
  /** Jobs waiting. */
  queueDepth(): Promise<number>;
}

/** A whole source, as the dispatcher builds it (LocalJobSource, LeasedJobSource). */
export interface JobSource extends SourceLifecycle, JobFeed, QueueNotices, QueueCounts {}
