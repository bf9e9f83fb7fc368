// `flowgate serve`: the reference server on embedded defaults.
import { EmbeddedEngine } from "../engine/embedded-engine.ts";
import { loadConfig, SERVE_FLAGS } from "../config/config.ts";
import { engineAdapter } from "../jobs/engine-adapter.ts";
import { settingsLine, startServer } from "../server/start.ts";

/** Usage of `flowgate serve`. */
export function serveUsage(): string {
  const flags = Object.entries(SERVE_FLAGS).map(([name, f]) => `  --${name.padEnd(13)} ${f.env.padEnd(22)} ${f.help}`);
  return `Usage: flowgate serve [flags]\n\nStarts the flowgate server. Each flag can also be set by its environment variable.\n\n${flags.join("\n")}\n`;
}

/** Runs the server until SIGINT or SIGTERM. */
export async function serve(argv: string[]): Promise<void> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(serveUsage());
    return;
  }
  const config = loadConfig(argv);
  const engine = new EmbeddedEngine({ partnerUrl: config.partnerUrl });
  const server = await startServer(config, engineAdapter(engine));
  process.stdout.write(`flowgate: ${settingsLine(config)}\nflowgate: listening on ${server.url}\n`);
  let closing = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (closing) return;
      closing = true;
      server.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}
