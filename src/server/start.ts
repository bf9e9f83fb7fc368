// `flowgate serve`: opens the runtime, builds the app, listens, prints settings and the URL.
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import type { Config } from "../config/config.ts";
import type { EnginePort } from "../jobs/engine-port.ts";
import { buildApp } from "./app.ts";
import { prettyStream } from "./pretty-log.ts";
import { openRuntime, type FullRuntime } from "../runtime/runtime.ts";

export interface RunningServer {
  app: FastifyInstance;
  /** The whole runtime: the app was given only its HTTP view. */
  runtime: FullRuntime;
  /** http://host:port of the listener. */
  url: string;
  /**
   * Stops the server. With `graceMs`, running jobs first get that long to finish while HTTP still
   * answers (readiness says not ready; submissions queue for the next start); then connections
   * close and whatever still runs is stopped (it ends `worker_lost` at the next start).
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

/** Starts a server for `config` with `engine`; `quiet` silences the request log (tests). */
export async function startServer(config: Config, engine: EnginePort, options: { quiet?: boolean; now?: () => number } = {}): Promise<RunningServer> {
  // Request logs carry the path only: query strings may hold signatures or tokens.
  const pretty = logFormatOf(config) === "pretty";
  const logger = options.quiet
    ? false
    : {
        // A terminal is for a person: requests are listed only when asked (--log-level info).
        level: config.logLevel ?? (pretty ? "warn" : "info"),
        serializers: {
          req: (req: { method: string; url: string }) => ({ method: req.method, path: req.url.split("?")[0] }),
          // The failure log passes what it means to say (a stack, or none for an outage); pino's own would recast it.
          err: (err: unknown) => (err instanceof Error ? pino.stdSerializers.err(err) : err),
        },
        // JSON lines leave through the thread pool, not a blocking write each; pino flushes what
        // is left when the process exits (a SIGKILL can lose the lines of the write under way).
        stream: pretty ? prettyStream(process.stdout) : pino.destination({ dest: 1, sync: false }),
      };
  // Lock the data directory, listen, and only then recover and dispatch: a server that cannot
  // listen exits without having touched a job.
  const runtime = await openRuntime(config, { engine, ...(options.now ? { now: options.now } : {}) });
  let app: FastifyInstance | undefined;
  try {
    app = await buildApp(runtime, { logger });
    await app.listen({ host: config.host, port: config.port });
    await runtime.start();
  } catch (err) {
    await app?.close().catch(() => undefined);
    await runtime.close();
    throw listenError(err, config);
  }
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  return {
    app,
    runtime,
    url,
    async close({ graceMs = 0 } = {}) {
      if (graceMs > 0) await runtime.stopRuns(graceMs);
      await app.close();
      await runtime.close();
    },
  };
}

/** The log format `auto` resolves to: pretty on a terminal, JSON for pipes, files and collectors. */
export function logFormatOf(config: Pick<Config, "logFormat">, isTTY = process.stdout.isTTY === true): "pretty" | "json" {
  return config.logFormat === "auto" ? (isTTY ? "pretty" : "json") : config.logFormat;
}

/** A listen failure in one clear sentence (the cause kept); other failures unchanged. */
function listenError(err: unknown, config: Config): unknown {
  const code = (err as { code?: unknown })?.code;
  const where = `${config.host}:${config.port}`;
  if (code === "EADDRINUSE") return new Error(`cannot listen on ${where}: the address is already in use`, { cause: err });
  if (code === "EACCES") return new Error(`cannot listen on ${where}: permission denied`, { cause: err });
  if (code === "EADDRNOTAVAIL") return new Error(`cannot listen on ${where}: the address is not available on this host`, { cause: err });
  return err;
}
