// Everything a running server holds, opened from the configuration: store, blobs, signer,
// engine, events, dispatcher, services and the reaper. HTTP-free, so tools and tests reuse it.
import { BlobHealth, InlineBlobs, UrlSigner, loadOrCreateSigningKey, openBlobStore, type BlobStore } from "../blobs/index.ts";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Config } from "../config/config.ts";
import { AssetService } from "../assets/asset-service.ts";
import { sweepOrphanBlobs } from "../assets/orphan-blobs.ts";
import { PendingWriteBack } from "../assets/pending-write-back.ts";
import { DataDirLock } from "../datadir/lock.ts";
import { StorageSpace, watchFailures } from "../datadir/space.ts";
import { Dispatcher } from "../jobs/dispatcher.ts";
import type { EnginePort } from "../jobs/engine-port.ts";
import { EventBus } from "../jobs/event-bus.ts";
import { JobService } from "../jobs/job-service.ts";
import { OutputNamer } from "../jobs/output-names.ts";
import { startReaper } from "../jobs/retention.ts";
import { openDirectory, openStore, PostgresLeases, type Directory, type JobRecord, type Store } from "../store/index.ts";
import type { LeaseOptions } from "../jobs/job-leases.ts";
import { followRemote, type EventRelay } from "../relay/event-relay.ts";
import { PostgresRelay } from "../relay/postgres-relay.ts";
import { FlowgateMetrics } from "../metrics/metrics.ts";
import { SurfacePolicy } from "../surfaces/surface-policy.ts";

/**
 * What the HTTP layer is given: the services, and narrow views of the queue. Never the store or
 * the dispatcher: a handler goes through the job and asset services, which keep their rules.
 */
export interface Runtime {
  config: Config;
  blobs: BlobStore;
  signer: UrlSigner;
  engine: EnginePort;
  events: EventBus;
  jobs: JobService;
  assets: AssetService;
  /** What differs between self-hosted, cloud and serverless. */
  surface: SurfacePolicy;
  /** Free space of the data directory: short after a write failed for space, until it returns. */
  space: StorageSpace;
  /** Accounts, keys and deployments (cloud and serverless only). */
  directory: Directory | null;
  /** Prometheus metrics of this server. */
  metrics: FlowgateMetrics;
  /** The queue's counts (metrics, sockets) and whether a job runs here. */
  queue: QueueView;
  /** The job as stored now, whoever owns it (an event stream's greeting); null when unknown. */
  currentJob(id: string): Promise<JobRecord | null>;
  /** Processes running jobs now: on PostgreSQL those of the deployment holding a live lease, else this one while it runs a job. */
  busyWorkers(): Promise<number>;
  now: () => number;
  /** What a load balancer should know: each check, true when it passes. */
  readiness(): Promise<Readiness>;
}

/** The queue as the HTTP layer sees it. */
export interface QueueView {
  /** Jobs waiting; with leases, across every process. */
  depth(): Promise<number>;
  /** Jobs this process runs now. */
  running(): number;
  /** An owner's jobs waiting or running (a socket's `queue_remaining`); with leases, across every process. */
  liveCount(owner: string): Promise<number>;
  /** Seconds the oldest queued job has waited; 0 when none waits. */
  oldestQueuedSeconds(): Promise<number>;
  /** Whether this process runs the job now. */
  runsHere(jobId: string): boolean;
}

/**
 * The whole runtime, as its opener holds it (the server's start, the worker, tests): the HTTP
 * layer's view plus the store, the dispatcher and the lifecycle.
 */
export interface FullRuntime extends Runtime {
  store: Store;
  dispatcher: Dispatcher;
  /** Recovers after a crash and starts dispatching and the reaper; call it once the server listens. */
  start(): Promise<void>;
  /**
   * Stops starting jobs; the running ones get `graceMs` to finish, then are stopped. Queued jobs
   * stay queued. A second call stops the running jobs at once.
   */
  stopRuns(graceMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** The checks of `GET /readyz`. */
export type Readiness = {
  store: boolean;
  engine: boolean;
  /** Room in the queue. */
  queue: boolean;
  /** False once stopping (new work belongs elsewhere), and while a store write of the dispatcher fails and is retried. */
  dispatch: boolean;
  /** False while the data directory is short of space (new data is refused, dispatch waits), or outputs' kept bytes wait for room on the blob filesystem. */
  storage: boolean;
  /** False while the blob store (a bucket, or the blob directory) cannot be reached. */
  blobs: boolean;
};

export interface RuntimeOptions {
  engine: EnginePort;
  /** Injected clock (tests). */
  now?: () => number;
  /** Called with reaper failures. */
  onBackgroundError?: (err: unknown) => void;
  /** Where runs say why infrastructure ended or stopped them (default: standard error). */
  log?: (line: string) => void;
  /**
   * Whether anyone here follows other processes' jobs (streams, sockets: default true). A worker
   * (no HTTP) hears only wakes: every notification a listener hears costs the database a
   * transaction of that listener's.
   */
  followsOthers?: boolean;
}

/**
 * Takes the data directory's lock (DataDirInUseError when another server holds it), then opens
 * the store and blobs under it and loads the queue. No job is touched until `start()`.
 */
export async function openRuntime(config: Config, options: RuntimeOptions): Promise<FullRuntime> {
  const lock = await DataDirLock.acquire(config.dataDir);
  // What opened before a later part failed to open, closed newest first: an embedder that
  // catches the failure keeps no connection, file or timer of it.
  const opened: Array<() => unknown> = [];
  try {
    return await openLocked(config, options, lock, opened);
  } catch (err) {
    for (const close of opened.reverse())
      await Promise.resolve()
        .then(close)
        .catch(() => undefined);
    lock.release();
    throw err;
  }
}

async function openLocked(config: Config, options: RuntimeOptions, lock: DataDirLock, opened: Array<() => unknown>): Promise<FullRuntime> {
  const now = options.now ?? Date.now;
  let dispatcher: Dispatcher | undefined;
  // Space returning lifts the short state by itself: the queue resumes.
  const space = await StorageSpace.open({ dataDir: config.dataDir, reserveBytes: config.spaceReserveBytes, onChange: (short) => short || dispatcher?.pump() });
  opened.push(() => space.close());
  // Every store and blob failure passes by the space watch: one that is for space, wherever it
  // happened, makes the directory short.
  const noteFailure = (err: unknown) => void space.noteFailure(err);
  const metrics = new FlowgateMetrics();
  opened.push(() => metrics.close());
  // PostgreSQL when configured (shared by every node), else the SQLite file of the data dir. Its
  // connections carry this process's tag, so that it can tell its own changes in notifications.
  // A transaction of this process left idle past its lease (the process stopped mid-write) is ended
  // by the server: its row locks would otherwise keep its jobs from any takeover or expiry. Never
  // under IDLE_IN_TRANSACTION_FLOOR_MS: a short lease must not end a transaction (a migration, a
  // claim) of a process the machine did not schedule for a moment.
  const tag = randomBytes(6).toString("hex");
  const database =
    config.databaseUrl === null
      ? null
      : ({
          kind: "postgres",
          url: config.databaseUrl,
          applicationName: `flowgate ${tag}`,
          idleInTransactionMs: Math.max(config.leaseMs, IDLE_IN_TRANSACTION_FLOOR_MS),
        } as const);
  const store = watchFailures(metrics.instrumentStore(await openStore(database ?? { dataDir: config.dataDir })), noteFailure);
  opened.push(() => store.close());
  const log = options.log ?? ((line: string) => void process.stderr.write(`flowgate: ${line}\n`));
  // While the blob store is unavailable no job starts (it could not store its outputs): the queue
  // waits, and resumes when a probe finds the store back. Each change is logged once.
  let blobsDown = 0;
  const openedBlobs = await openBlobStore(config);
  opened.push(() => openedBlobs.close());
  const blobHealth = new BlobHealth(openedBlobs, {
    onChange: (available, reason) => {
      if (!available) blobsDown = Date.now();
      else dispatcher?.pump();
      const why = reason instanceof Error ? reason.message : String(reason);
      log(
        available
          ? `blob storage answers again after ${Math.round((Date.now() - blobsDown) / 1000)} s; dispatch resumes`
          : `blob storage is unavailable (${why}); dispatch waits`,
      );
    },
  });
  const watchedBlobs = watchFailures(
    watchFailures(openedBlobs, (err) => blobHealth.noteFailure(err)),
    noteFailure,
  );
  // On PostgreSQL small outputs live in the database (their ends write them, see endWithOutputs).
  const blobs = database === null ? watchedBlobs : new InlineBlobs(watchedBlobs, store);
  // A bucket down at start is a readiness failure, not a crash: the operator is told once, in words.
  if (config.blobStore !== null) void blobs.check().catch((err: unknown) => log(`${(err as Error).message}; not ready until it answers`));
  const signer = new UrlSigner(config.signingKey ?? (await loadOrCreateSigningKey(config.dataDir)));
  const events = new EventBus();
  opened.push(() => blobHealth.close());
  const directory = config.surface === "self-hosted" ? null : await openDirectory(database ?? config.dataDir);
  opened.push(() => directory?.close());
  // On PostgreSQL several processes share the jobs: they are claimed under leases (src/store/job-leases.ts).
  const leases = database === null ? null : await PostgresLeases.open(database);
  opened.push(() => leases?.close());
  /**
   * A dispatching process listens for wakes only while it has free slots and nothing to claim; a
   * process that follows no other's jobs (a worker) listens for nothing else, and one that does
   * (a server) listens to everything only while a stream or socket here follows a job.
   */
  const wakesOnly = options.followsOthers === false;
  let listeningRelay: EventRelay | null = null;
  const lease: LeaseOptions | undefined =
    leases === null
      ? undefined
      : {
          leases,
          workerId: workerId(),
          leaseMs: config.leaseMs,
          dispatch: config.dispatch,
          wantWakes: (on: boolean) => listeningRelay?.wantWakes(on),
        };
  const surface = new SurfacePolicy({
    surface: config.surface,
    token: config.token,
    directory,
    tiers: config.tiers,
    creditRate: config.creditRate,
    notReadyRetryAfter: 5,
    metricsToken: config.metricsToken,
  });
  const assets = new AssetService({
    store,
    blobs,
    now,
    retentionMs: config.retentionMs,
    maxUploadBytes: config.maxUploadBytes,
    space,
    proxyDownloads: config.blobProxy,
    blobHealth,
    outputWaitMs: config.blobWaitMs,
  });
  dispatcher = new Dispatcher({
    store,
    assets,
    engine: options.engine,
    events,
    now,
    concurrency: config.concurrency,
    captureLogs: surface.capturesLogs,
    ...(config.surface === "cloud" ? { slotsFor: (owner: string) => surface.slotsFor(owner) } : {}),
    logLimitBytes: config.logLimitBytes,
    names: new OutputNamer(store),
    // On PostgreSQL, small last outputs are kept in the database by the end's statement, for good:
    // staged bytes kept there until their file is named would cost a transaction to forget.
    endWithOutputs: database === null ? true : "inline",
    mayStart: () => !space.short && blobHealth.available,
    ...(lease ? { lease } : {}),
    log,
  });
  const jobs = new JobService({
    store,
    engine: options.engine,
    assets,
    dispatcher,
    events,
    now,
    retentionMs: config.retentionMs,
    queueLimit: config.queueLimit,
    beforeSubmit: async (caller) => {
      space.assertRoom(); // no new job while the disk is full: it could not save its outputs
      await surface.beforeSubmit(caller);
    },
  });
  // Outputs' bytes the store kept at a run's end, written back at start (a power loss came before their files were durable).
  const writeBack = new PendingWriteBack(store, blobs);
  let relay: EventRelay | null = null;
  /** Closes what was opened, the space watch and the connections, at the runtime's close. */
  const closeOpened = async (): Promise<void> => {
    space.close();
    blobHealth.close();
    await store.close();
    await blobs.close();
    await directory?.close();
    await lease?.leases.close();
    await relay?.close();
  };
  try {
    // Live events of runs reach the other processes through the relay.
    relay = database === null ? null : await PostgresRelay.open({ ...database, tag, redisUrl: config.redisUrl });
    opened.push(() => relay?.close());
    if (relay && config.dispatch) events.relayTo(relay);
    // A submission wakes the idle workers at once, not at their next heartbeat.
    // Any other status change here moves the queue the positions of new jobs are counted in.
    const waker = relay;
    if (waker) events.subscribeAll((e) => e.type === "status" && (e.job.status === "queued" ? waker.wake() : dispatcher.queueChanged()));
    // Outputs a power loss caught between their end's commit and their files' fsync: before any read.
    // On a full blob filesystem the server starts not ready, and writes them back once they fit.
    await writeBack.restoreWhenRoom(1_000, options.onBackgroundError);
    await dispatcher.load();
  } catch (err) {
    writeBack.stop();
    throw err; // openRuntime closes what was opened
  }
  metrics.observeJobs(events); // before the start, so that recovered jobs count too
  // Orphan blob files (a crash between bytes and record): swept at start, then with the reaper, at
  // most every ten minutes for the whole store: a pass lists every blob file, so the processes
  // sharing a store take turns (a fleet's restart sweeps once, not once per process).
  const sweepOrphans = async (): Promise<number> => {
    if (!(await store.takeTurn("orphan-blob-sweep", ORPHAN_SWEEP_EVERY_MS, Date.now()))) return 0;
    const removed = await sweepOrphanBlobs({ store, blobs });
    metrics.orphanBlobsRemoved(removed);
    return removed;
  };
  const onBackgroundError = options.onBackgroundError ?? (() => undefined);
  let stopCharging: () => void = () => undefined;
  let stopReaper: () => void = () => undefined;
  let stopListening: () => Promise<void> = async () => undefined;
  return {
    config,
    store,
    blobs,
    signer,
    engine: options.engine,
    events,
    dispatcher,
    jobs,
    assets,
    surface,
    space,
    directory,
    metrics,
    queue: {
      depth: () => dispatcher.queueDepth(),
      running: () => dispatcher.runningCount,
      liveCount: (owner) => dispatcher.liveCount(owner),
      async oldestQueuedSeconds() {
        const [oldest] = await store.queuedJobs(1);
        return oldest === undefined ? 0 : Math.max(0, (now() - oldest.created_at) / 1000);
      },
      runsHere: (jobId) => dispatcher.runs(jobId),
    },
    currentJob: (id) => store.getJob(id),
    busyWorkers: leases === null ? async () => (dispatcher.runningCount > 0 ? 1 : 0) : () => leases.busyWorkers(),
    now,
    async readiness() {
      const [storeOk, engineOk, blobsOk] = await Promise.all([
        store.check().then(
          () => true,
          () => false,
        ),
        options.engine.ready().catch(() => false),
        blobHealth.check(), // within the store's own short bound, whatever the bucket does
      ]);
      return {
        store: storeOk,
        engine: engineOk,
        queue: dispatcher.waiting < config.queueLimit,
        dispatch: !dispatcher.stopping && !dispatcher.failing,
        storage: !space.short && !writeBack.left,
        blobs: blobsOk,
      };
    },
    async start() {
      // What other processes do reaches this process's streams and sockets (PostgreSQL only).
      if (relay !== null) {
        const heard = relay;
        stopListening = await heard.listen(
          followRemote(
            store,
            events,
            (id) => dispatcher.runs(id),
            () => dispatcher.pump(),
            (id, status) => dispatcher.queueChanged(id, status),
          ),
          wakesOnly ? { wakesOnly } : { follow: events.following, wakes: config.dispatch },
        );
        listeningRelay = heard;
        if (!wakesOnly)
          events.watchFollowing(
            (on) => heard.wantFollow(on),
            () => heard.listening(),
          );
      }
      await dispatcher.start();
      stopCharging = surface.chargeOnEnd(events, onBackgroundError);
      stopReaper = startReaper({ store, blobs, dispatcher, events, now, sweepOrphans }, config.reaperIntervalMs, onBackgroundError);
      void sweepOrphans().catch(onBackgroundError); // off the start's path: a large store takes a while
    },
    stopRuns: (graceMs) => dispatcher.stop(graceMs),
    async close() {
      metrics.close();
      stopReaper();
      stopCharging();
      await stopListening();
      await dispatcher.stop();
      writeBack.stop();
      await assets.flushStaged(); // staged outputs get their names now rather than at the next start
      await closeOpened();
      lock.release();
    },
  };
}

/** Least time between two sweeps of orphan blob files. */
const ORPHAN_SWEEP_EVERY_MS = 10 * 60_000;

/** Least time the database lets a transaction of this process idle before it ends it (see the opening). */
const IDLE_IN_TRANSACTION_FLOOR_MS = 5000;

/** This process in `jobs.worker_id`: host, pid, and a random part (pids are reused). */
function workerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
}
