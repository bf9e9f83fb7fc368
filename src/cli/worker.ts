// `flowgate worker`: claims queued jobs from the shared PostgreSQL database and runs them, on the
// embedded engine or in front of ComfyUI; no API (with --health, only its health checks over
// HTTP). API nodes (`flowgate serve --no-dispatch`) take the submissions.
import { type Config, describeConfig, SERVE_FLAGS } from "../config/config.ts";
import { UsageError } from "./command.ts";
import { stopWhenOrphaned } from "./parent-watch.ts";
import { graceWait } from "./stop-notice.ts";
import { configFrom, flagLines } from "./serve.ts";

/** Flags of serve that mean nothing to a worker (it serves no API, and always runs jobs); --host and --port place its --health checks. */
const HTTP_ONLY = new Set([
  "token",
  "public-url",
  "metrics-token",
  "serverless-domain",
  "no-dispatch",
  "stream-preview-rate",
  "max-streams-per-caller",
  "max-upload-size",
  "blob-proxy",
  "labels",
  "log-format",
]);

/** Settings of the banner that mean nothing to a worker: those of the API, and where it listens unless --health. */
const API_SETTINGS = ["token", "metricsToken", "publicUrl", "maxUploadSize", "maxStreamsPerCaller", "labels", "blobProxy", "dispatch"];

/** The worker's start-up line: what it runs with, never a secret. */
export function workerSettingsLine(config: Config): string {
  const hidden = new Set([...API_SETTINGS, ...(config.health ? [] : ["host", "port"])]);
  return Object.entries(describeConfig(config))
    .filter(([key]) => !hidden.has(key))
    .map(([key, value]) => `${key}=${value}`)
    .join(" ");
}

/** Usage of `flowgate worker`. */
export function workerUsage(): string {
  const flags = flagLines(Object.entries(SERVE_FLAGS).filter(([name]) => !HTTP_ONLY.has(name)));
  return `Usage: flowgate worker --database-url postgres://... [flags]\n\nClaims queued jobs from the shared PostgreSQL database and runs them (no API; --health answers\nGET /healthz and /readyz on --host:--port). Each flag can also be set by its environment variable.\n\n${flags}\n`;
}

/** Runs a worker until SIGINT or SIGTERM. */
export async function worker(argv: string[]): Promise<void> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(workerUsage());
    return;
  }
  const config = { ...configFrom(argv), dispatch: true };
  if (config.databaseUrl === null) throw new UsageError("a worker needs --database-url: it claims jobs from the PostgreSQL database the API nodes share");
  const [{ openRuntime }, { engineAdapter }, { createEngine }, { serveWorkerHealth }] = await Promise.all([
    import("../runtime/runtime.ts"),
    import("../jobs/engine-adapter.ts"),
    import("./create-engine.ts"),
    import("./worker-health.ts"),
  ]);
  const engine = createEngine(config);
  const runtime = await openRuntime(config, { engine: engineAdapter(engine), followsOthers: false }).catch(async (err: unknown) => {
    await engine.close?.();
    throw err;
  });
  try {
    await runtime.start();
  } catch (err) {
    await runtime.close();
    await engine.close?.();
    throw err;
  }
  const health = config.health
    ? await serveWorkerHealth(runtime, config.host, config.port).catch(async (err: unknown) => {
        await runtime.close();
        await engine.close?.();
        throw err;
      })
    : null;
  process.stdout.write(`flowgate: ${workerSettingsLine(config)}\nflowgate: worker claiming jobs\n`);
  if (health !== null) process.stdout.write(`flowgate: health checks on ${health.url}/healthz and ${health.url}/readyz\n`);
  // Nothing else need hold the event loop (the heartbeat is unref'd, idle connections close): stay up until a signal.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  let closing = false;
  // npm's SIGTERM does not reach us through its shell: leaving with the parent is the same stop.
  stopWhenOrphaned(() => process.emit("SIGTERM"));
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (closing) {
        void runtime.stopRuns(); // a second signal: stop the running jobs now
        return;
      }
      closing = true;
      clearInterval(keepAlive);
      const waits = graceWait(runtime.queue.running(), config.shutdownGraceMs, signal);
      process.stdout.write(`flowgate: worker stopping: claiming no more jobs${waits === null ? "" : `; ${waits}`}\n`);
      runtime
        .stopRuns(config.shutdownGraceMs)
        .then(() => runtime.close())
        .then(() => engine.close?.())
        .then(() => health?.close())
        .then(
          () => process.exit(0),
          () => process.exit(1),
        );
    });
  }
}
