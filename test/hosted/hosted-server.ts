// Starts a real flowgate server on a free port with a temporary data dir, for hosted tests.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadConfig } from "../../src/config/config.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { engineAdapter } from "../../src/jobs/engine-adapter.ts";
import { startServer, type RunningServer } from "../../src/server/start.ts";

export interface TestServer extends RunningServer {
  dataDir: string;
  stop(): Promise<void>;
}

/** A server with the embedded engine; `flags` as on the command line. */
export async function startTestServer(flags: string[] = []): Promise<TestServer> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "flowgate-hosted-"));
  const config = loadConfig(["--port", "0", "--data-dir", dataDir, ...flags], {});
  const server = await startServer(config, engineAdapter(new EmbeddedEngine()), { quiet: true });
  return {
    ...server,
    dataDir,
    async stop() {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls `probe` until it returns a value other than undefined, or fails after `ms`. */
export async function until<T>(probe: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 25));
  }
}
