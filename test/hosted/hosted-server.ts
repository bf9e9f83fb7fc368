// Starts a real flowgate server on a free port with a temporary data dir, for hosted tests.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadConfig } from "../../src/config/config.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import type { NodeDefinition } from "../../src/engine/node-spec.ts";
import { engineAdapter } from "../../src/jobs/engine-adapter.ts";
import { startServer, type RunningServer } from "../../src/server/start.ts";
import type { DirectoryLocation } from "../../src/store/index.ts";
import { createTestSchema, dropTestSchema, schemaUrl } from "../postgres/pg.ts";

export interface TestServer extends RunningServer {
  dataDir: string;
  /** Where the server keeps accounts, keys and deployments: open it with openDirectory. */
  directory: DirectoryLocation;
  stop(): Promise<void>;
  /** Closes this server and starts another on the same data dir and database (`url` then names the new one). */
  restart(): Promise<TestServer>;
}

/** Options of startTestServer beyond the command line's flags. */
export interface TestServerOptions {
  /** Extra node classes of the embedded engine (a test's gates). */
  extraNodes?: NodeDefinition[];
}

let database: "sqlite" | "postgres" = "sqlite";

/** Runs the servers of the test files imported after this call on PostgreSQL, blobs in a --blob-dir of their own. */
export function useDatabase(kind: "sqlite" | "postgres"): void {
  database = kind;
}

/** A server with the embedded engine; `flags` as on the command line. */
export async function startTestServer(flags: string[] = [], options: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "flowgate-hosted-"));
  const schema = database === "postgres" ? await createTestSchema() : null;
  return serve(dataDir, schema, flags, options);
}

async function serve(dataDir: string, schema: string | null, flags: string[], options: TestServerOptions): Promise<TestServer> {
  const pgFlags = schema === null ? [] : ["--database-url", schemaUrl(schema), "--blob-dir", path.join(dataDir, "shared-blobs")];
  const config = loadConfig(["--port", "0", "--data-dir", dataDir, ...pgFlags, ...flags], {});
  const server = await startServer(config, engineAdapter(new EmbeddedEngine({ extraNodes: options.extraNodes ?? [] })), { quiet: true });
  return {
    ...server,
    dataDir,
    directory: schema === null ? dataDir : { kind: "postgres", url: schemaUrl(schema) },
    async stop() {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
      if (schema !== null) await dropTestSchema(schema);
    },
    async restart() {
      await server.close();
      return serve(dataDir, schema, flags, options);
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
