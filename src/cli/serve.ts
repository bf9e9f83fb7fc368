// `flowgate serve`: the reference server, on the embedded engine or in front of ComfyUI. The
// server and the engines are imported once the flags are read, so --help and a usage error are quick.
import { loadConfig, SERVE_FLAGS, settingsLine, type Config } from "../config/config.ts";
import { parseS3Url } from "../blobs/s3-location.ts";
import { UsageError } from "./command.ts";
import { stopWhenOrphaned } from "./parent-watch.ts";
import { graceWait } from "./stop-notice.ts";
import { explainParseError } from "./suggest.ts";

/** Flags that mean something to a worker only: serve always answers its health checks. */
const WORKER_ONLY = new Set(["health"]);

/** Usage of `flowgate serve`. */
export function serveUsage(): string {
  const flags = Object.entries(SERVE_FLAGS).filter(([name]) => !WORKER_ONLY.has(name));
  return `Usage: flowgate serve [flags]\n\nStarts the flowgate server. Each flag can also be set by its environment variable.\n\n${flagLines(flags)}\n`;
}

/** One aligned line per flag: its name, its environment variable, its help. */
export function flagLines(flags: ReadonlyArray<[string, { env: string; help: string }]>): string {
  const nameWidth = Math.max(...flags.map(([name]) => name.length)) + 2;
  const envWidth = Math.max(...flags.map(([, f]) => f.env.length));
  return flags.map(([name, f]) => `  ${`--${name}`.padEnd(nameWidth)} ${f.env.padEnd(envWidth)} ${f.help}`).join("\n");
}

/** The configuration of serve and worker; every mistake in it is a usage error (exit 2), with the nearest flag for a mistyped one. */
export function configFrom(argv: string[]): Config {
  let config: Config;
  try {
    config = loadConfig(argv);
  } catch (err) {
    throw new UsageError(explainParseError((err as Error).message, Object.keys(SERVE_FLAGS)));
  }
  try {
    // The bucket's name and prefix are checked here, before anything opens, rather than by the store.
    if (config.blobStore !== null) parseS3Url(config.blobStore);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  return config;
}

/** Runs the server until SIGINT or SIGTERM. */
export async function serve(argv: string[]): Promise<void> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(serveUsage());
    return;
  }
  const config = configFrom(argv);
  const [{ startServer }, { engineAdapter }, { createEngine }] = await Promise.all([
    import("../server/start.ts"),
    import("../jobs/engine-adapter.ts"),
    import("./create-engine.ts"),
  ]);
  const engine = createEngine(config);
  const server = await startServer(config, engineAdapter(engine)).catch(async (err: unknown) => {
    await engine.close?.();
    throw err;
  });
  process.stdout.write(`flowgate: ${settingsLine(config)}\nflowgate: listening on ${server.url}\n`);
  // Where a person goes next (the settings line above is for whoever reads the log later).
  process.stdout.write(`flowgate: dashboard ${server.url}/  API reference ${server.url}/docs\n`);
  let closing = false;
  // npm's SIGTERM does not reach us through its shell: leaving with the parent is the same stop.
  stopWhenOrphaned(() => process.emit("SIGTERM"));
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (closing) {
        // A second signal: stop the running jobs now instead of waiting for them.
        void server.runtime.stopRuns();
        return;
      }
      closing = true;
      const grace = config.shutdownGraceMs;
      const waits = graceWait(server.runtime.queue.running(), grace, signal);
      if (waits !== null) process.stdout.write(`flowgate: stopping; ${waits}\n`);
      server
        .close({ graceMs: grace })
        .then(() => engine.close?.())
        .then(
          () => process.exit(0),
          () => process.exit(1),
        );
    });
  }
}
