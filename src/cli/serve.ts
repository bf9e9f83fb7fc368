// `flowgate serve`: the reference server, on the embedded engine or in front of ComfyUI.
import { ComfyUIEngine } from "../engine/comfyui/index.ts";
import { EmbeddedEngine } from "../engine/embedded-engine.ts";
import type { Engine } from "../engine/engine.ts";
import { loadConfig, SERVE_FLAGS, settingsLine, type Config } from "../config/config.ts";
import { engineAdapter } from "../jobs/engine-adapter.ts";
import { startServer } from "../server/start.ts";

/** Usage of `flowgate serve`. */
export function serveUsage(): string {
  return `Usage: flowgate serve [flags]\n\nStarts the flowgate server. Each flag can also be set by its environment variable.\n\n${flagLines(Object.entries(SERVE_FLAGS))}\n`;
}

/** One aligned line per flag: its name, its environment variable, its help. */
export function flagLines(flags: ReadonlyArray<[string, { env: string; help: string }]>): string {
  const nameWidth = Math.max(...flags.map(([name]) => name.length)) + 2;
  const envWidth = Math.max(...flags.map(([, f]) => f.env.length));
  return flags.map(([name, f]) => `  ${`--${name}`.padEnd(nameWidth)} ${f.env.padEnd(envWidth)} ${f.help}`).join("\n");
}

/** The engine the configuration asks for. */
export function createEngine(config: Config): Engine {
  if (config.engine === "comfyui") return new ComfyUIEngine({ urls: config.comfyuiUrls, outputDirs: config.comfyuiOutputDirs, maxQueue: config.queueLimit });
  return new EmbeddedEngine({ partnerUrl: config.partnerUrl, cacheBytes: config.cacheBytes, jobMemoryBytes: config.jobMemoryBytes });
}

/** Runs the server until SIGINT or SIGTERM. */
export async function serve(argv: string[]): Promise<void> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(serveUsage());
    return;
  }
  const config = loadConfig(argv);
  const engine = createEngine(config);
  const server = await startServer(config, engineAdapter(engine)).catch(async (err: unknown) => {
    await engine.close?.();
    throw err;
  });
  process.stdout.write(`flowgate: ${settingsLine(config)}\nflowgate: listening on ${server.url}\n`);
  let closing = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (closing) {
        // A second signal: stop the running jobs now instead of waiting for them.
        void server.runtime.dispatcher.stop();
        return;
      }
      closing = true;
      const running = server.runtime.dispatcher.runningCount;
      const grace = config.shutdownGraceMs;
      if (running > 0 && grace > 0) {
        process.stdout.write(`flowgate: stopping; waiting up to ${grace / 1000}s for ${running} running job(s) (${signal} again stops them now)\n`);
      }
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
