// Everything a running server holds, opened from the configuration: store, blobs, signer,
// engine, events, dispatcher, services and the reaper. HTTP-free, so tools and tests reuse it.
import { BlobStore, UrlSigner, loadOrCreateSigningKey } from "../blobs/index.ts";
import type { Config } from "../config/config.ts";
import { AssetService } from "../assets/asset-service.ts";
import { Dispatcher } from "../jobs/dispatcher.ts";
import type { EnginePort } from "../jobs/engine-port.ts";
import { EventBus } from "../jobs/event-bus.ts";
import { JobService } from "../jobs/job-service.ts";
import { OutputNamer } from "../jobs/output-names.ts";
import { startReaper } from "../jobs/retention.ts";
import { openDirectory, openStore, type Directory, type Store } from "../store/index.ts";
import { SurfacePolicy } from "../surfaces/surface-policy.ts";
import { FinishedJobViews } from "./v2/finished-job-views.ts";

export interface Runtime {
  config: Config;
  store: Store;
  blobs: BlobStore;
  signer: UrlSigner;
  engine: EnginePort;
  events: EventBus;
  dispatcher: Dispatcher;
  jobs: JobService;
  assets: AssetService;
  /** What differs between self-hosted, cloud and serverless. */
  surface: SurfacePolicy;
  /** Rendered views of finished jobs, for repeated GETs. */
  finishedViews: FinishedJobViews;
  /** Accounts, keys and deployments (cloud and serverless only). */
  directory: Directory | null;
  now: () => number;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  engine: EnginePort;
  /** Injected clock (tests). */
  now?: () => number;
  /** Called with reaper failures. */
  onBackgroundError?: (err: unknown) => void;
}

/** Opens the store and blobs under the data dir and starts dispatching (recovering after a crash). */
export async function openRuntime(config: Config, options: RuntimeOptions): Promise<Runtime> {
  const now = options.now ?? Date.now;
  // PostgreSQL when configured (shared by every node), else the SQLite file of the data dir.
  const database = config.databaseUrl === null ? null : ({ kind: "postgres", url: config.databaseUrl } as const);
  const store = await openStore(database ?? { dataDir: config.dataDir });
  const blobs = await BlobStore.open(config.dataDir, config.blobDir === null ? {} : { root: config.blobDir });
  const signer = new UrlSigner(config.signingKey ?? (await loadOrCreateSigningKey(config.dataDir)));
  const events = new EventBus();
  const directory = config.surface === "self-hosted" ? null : await openDirectory(database ?? config.dataDir);
  const surface = new SurfacePolicy({
    surface: config.surface,
    token: config.token,
    directory,
    tiers: config.tiers,
    creditRate: config.creditRate,
    notReadyRetryAfter: 5,
  });
  const assets = new AssetService({ store, blobs, now, retentionMs: config.retentionMs, maxUploadBytes: config.maxUploadBytes });
  const dispatcher = new Dispatcher({
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
  });
  const jobs = new JobService({ store, engine: options.engine, assets, dispatcher, events, now, retentionMs: config.retentionMs, queueLimit: config.queueLimit, beforeSubmit: (caller) => surface.beforeSubmit(caller) });
  await dispatcher.start();
  const stopCharging = surface.chargeOnEnd(events, options.onBackgroundError ?? (() => undefined));
  const stopReaper = startReaper({ store, blobs, dispatcher, events, now }, config.reaperIntervalMs, options.onBackgroundError ?? (() => undefined));
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
    finishedViews: new FinishedJobViews(),
    directory,
    now,
    async close() {
      stopReaper();
      stopCharging();
      await dispatcher.stop();
      await store.close();
      await directory?.close();
    },
  };
}
