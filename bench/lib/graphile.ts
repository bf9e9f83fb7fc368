// graphile-worker beside flowgate (the PostgreSQL scenario's dispatch figures): its tables in a
// bench schema of their own, jobs added from the bench process, runners in processes of their
// own (bench/lib/graphile-child.ts), as `flowgate worker` processes are.
import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { makeWorkerUtils, Logger, type WorkerUtils } from "graphile-worker";
import { ROOT, supervise } from "./child.ts";
import type { GraphileChildNotice, GraphileChildSpec } from "./graphile-child.ts";
import { BENCH_DATABASE_URL } from "./postgres.ts";

const CHILD = resolve(ROOT, "bench/lib/graphile-child.ts");
const quiet = new Logger(() => () => undefined);

/** Adds `noop` jobs to graphile-worker's queue in `schema` (migrated on open) of the database at `connectionString`. */
export async function graphileUtils(schema: string, connectionString = BENCH_DATABASE_URL): Promise<WorkerUtils> {
  const utils = await makeWorkerUtils({ connectionString, schema, logger: quiet });
  await utils.migrate();
  return utils;
}

/** Called with each job's start and success (its payload's n, the runner's hrtime ns). */
export interface GraphileHandlers {
  onStart(n: number, t: bigint): void;
  onSuccess(n: number, t: bigint): void;
}

/** A running graphile-worker runner process. */
export interface GraphileRunner {
  stop(): Promise<void>;
}

/**
 * Starts a runner of `concurrency` on `schema` and waits until it listens for jobs. The handlers
 * hear every job from the start: jobs queued before may run before the runner says it listens.
 */
export async function startGraphileRunner(
  schema: string,
  concurrency: number,
  handlers: GraphileHandlers,
  timeoutMs = 60_000,
  connectionString = BENCH_DATABASE_URL,
): Promise<GraphileRunner> {
  const spec: GraphileChildSpec = { connectionString, schema, concurrency };
  const child: ChildProcess = spawn(process.execPath, [CHILD, JSON.stringify(spec)], {
    cwd: ROOT,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env: { ...process.env, NODE_ENV: "production" },
  });
  const { exited, kill, stop } = supervise(child);
  const runner: GraphileRunner = {
    stop,
  };
  const ready = new Promise<void>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`graphile-worker runner did not listen within ${timeoutMs} ms`)), timeoutMs);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error("graphile-worker runner exited before it listened"));
    });
    child.on("message", (raw) => {
      const m = raw as GraphileChildNotice;
      if (m.event === "ready") {
        clearTimeout(timer);
        resolveReady();
      } else if (m.event === "start") handlers.onStart(m.n, BigInt(m.tNs));
      else handlers.onSuccess(m.n, BigInt(m.tNs));
    });
  });
  try {
    await ready;
  } catch (err) {
    kill();
    await exited;
    throw err;
  }
  return runner;
}
