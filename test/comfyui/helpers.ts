// Shared fixtures of the comfyui backend tests: fast engine timings, a recorder of engine
// callbacks, a flowgate child process serving ComfyUI's routes (the upstream), and a flowgate
// in comfyui mode in this process (the front).
import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { loadConfig } from "../../src/config/config.ts";
import { ComfyUIEngine, type ComfyUIEngineOptions } from "../../src/engine/comfyui/index.ts";
import type { EngineOutput, ExecuteOptions } from "../../src/engine/engine.ts";
import { engineAdapter } from "../../src/jobs/engine-adapter.ts";
import { startServer, type RunningServer } from "../../src/server/start.ts";
import { spawnCli } from "../server/helpers.ts";

export const ROOT = resolve(import.meta.dirname, "../..");

/** Engine timings short enough for tests (never asserted on). */
export const FAST: Omit<ComfyUIEngineOptions, "urls"> = {
  pollIntervalMs: 100,
  reconnectMinMs: 20,
  reconnectMaxMs: 200,
  confirmTimeoutMs: 3_000,
  cancelWaitMs: 3_000,
  lostAfterMs: 3_000,
  unreachableGraceMs: 1_500,
  probeTimeoutMs: 1_000,
};

/** Polls `probe` until it returns something other than undefined, or fails at the deadline. */
export async function until<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every callback of a run, in order. */
export function recorder(): { events: Array<[string, ...unknown[]]>; outputs: EngineOutput[]; options: ExecuteOptions } {
  const events: Array<[string, ...unknown[]]> = [];
  const outputs: EngineOutput[] = [];
  const options: ExecuteOptions = {
    onStart: (e) => void events.push(["start", e.nodes, e.steps]),
    onCached: (ids) => void events.push(["cached", ids]),
    onNodeStart: (e) => void events.push(["node_start", e.node_id, e.class_type]),
    onNodeDone: (e) => void events.push(["node_done", e.node_id, e.cached]),
    onOutput: (o) => {
      outputs.push(o);
      events.push(["output", o.node_id, o.name]);
    },
    onProgress: (e) => void events.push(["progress", e.node_id, e.value, e.max]),
    onPreview: (e) => void events.push(["preview", e.node_id, e.content_type, e.data]),
    onLog: (e) => void events.push(["log", e.text, e.node_id]),
  };
  return { events, outputs, options };
}

/** A `flowgate serve` child process with the embedded engine: ComfyUI's routes, bare and under /api. */
export interface Upstream {
  child: ChildProcess;
  url: string;
  port: number;
  dataDir: string;
  output(): string;
  /** Kills it (SIGKILL: a crash, not a shutdown) and waits for the exit. */
  kill(): Promise<void>;
  /** Kills it and removes its data dir. */
  stop(): Promise<void>;
}

/** The environment without flowgate settings, so the upstream runs on its own flags only. */
function upstreamEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("FLOWGATE_")) delete env[k];
  return env;
}

/** Starts an upstream on `port` (0 picks one) with a fresh data dir unless one is given. */
export async function startUpstream(options: { port?: number; dataDir?: string; flags?: string[] } = {}): Promise<Upstream> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), "flowgate-upstream-")));
  const { child, url, output, exited } = await spawnCli(
    ["--port", String(options.port ?? 0), "--data-dir", dataDir, "--log-level", "error", ...(options.flags ?? [])],
    upstreamEnv(),
    { replaceEnv: true },
  );
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  };
  return {
    child,
    url,
    port: Number(new URL(url).port),
    dataDir,
    output,
    kill,
    async stop() {
      await kill();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A flowgate in comfyui mode, in this process. */
export interface Front extends RunningServer {
  engine: ComfyUIEngine;
  dataDir: string;
  stop(): Promise<void>;
}

/** Starts a front for the given ComfyUI URLs. */
export async function startFront(urls: string[], flags: string[] = [], engineOptions: Partial<ComfyUIEngineOptions> = {}): Promise<Front> {
  const dataDir = await mkdtemp(join(tmpdir(), "flowgate-front-"));
  const config = loadConfig(["--port", "0", "--data-dir", dataDir, "--engine", "comfyui", ...urls.flatMap((u) => ["--comfyui-url", u]), ...flags], {});
  const engine = new ComfyUIEngine({ ...FAST, ...engineOptions, urls: config.comfyuiUrls, maxQueue: config.queueLimit });
  const server = await startServer({ ...config, reaperIntervalMs: 3_600_000 }, engineAdapter(engine), { quiet: true });
  return {
    ...server,
    engine,
    dataDir,
    async stop() {
      const closing = server.close();
      server.app.server.closeAllConnections();
      await closing;
      await engine.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** JSON over fetch: status and parsed body. */
export async function call(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** Polls a v2 job until `done(job)` holds. */
export function waitJob(base: string, id: string, done: (job: any) => boolean, what: string, ms = 20_000): Promise<any> {
  return until(
    async () => {
      const { body } = await call("GET", `${base}/api/v2/jobs/${id}`);
      return done(body) ? body : undefined;
    },
    what,
    ms,
  );
}

export { TERMINAL } from "../server/helpers.ts";

/** A quick graph that prints `text`: a prompt of two light nodes, told apart by its text. */
export function textGraph(text: string): Record<string, unknown> {
  return {
    "1": { class_type: "PrimitiveString", inputs: { value: text } },
    "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
  };
}

/** The flags of a flowgate process in front of the ComfyUI at `url`, reading no output folder of its own. */
export function comfyFlags(url: string): string[] {
  return ["--engine", "comfyui", "--comfyui-url", url, "--comfyui-output-dir", "off"];
}
