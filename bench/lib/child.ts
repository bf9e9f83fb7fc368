// Starts a server child (bench/server-child.ts) in its own process and talks to it over IPC.
import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import type { ChildCounts, ChildNotice, ChildReply, ChildRequest, ChildSpec, MemorySample } from "./protocol.ts";

export const ROOT = resolve(import.meta.dirname, "../..");
const CHILD = resolve(ROOT, "bench/server-child.ts");

/** Distributes the Omit over the request union. */
type RequestBody = ChildRequest extends infer R ? (R extends { id: number } ? Omit<R, "id"> : never) : never;

/** A running server child. */
export interface ServerChild {
  name: string;
  url: string;
  pid: number;
  call<T>(request: RequestBody): Promise<T>;
  memory(gc?: boolean): Promise<MemorySample>;
  counts(): Promise<ChildCounts>;
  /**
   * Arms a watch: `at` resolves with the child's hrtime (ns) when `jobId` is published with
   * `status`, and when its event loop was next idle; call before causing the transition.
   */
  watchTransition(jobId: string, status: string): Promise<{ at: Promise<{ published: bigint; idle: bigint }> }>;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

/** The node flags `npm start` and bin/flowgate.js run the server with. */
export const SERVER_NODE_FLAGS = ["--max-semi-space-size=16"];

/** Extra node flags for every child (e.g. --cpu-prof), set by the runner. */
export const childNodeFlags: string[] = [];

/** Spawns a child for `spec` and waits until it listens. */
export async function spawnServer(spec: ChildSpec, timeoutMs = 60_000): Promise<ServerChild> {
  // The soft descriptor limit is raised to the hard one for 10,000 streams (no-op when equal).
  const child = spawn(
    "/bin/sh",
    [
      "-c",
      'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"',
      "sh",
      process.execPath,
      "--expose-gc",
      ...SERVER_NODE_FLAGS,
      ...childNodeFlags,
      CHILD,
      JSON.stringify(spec),
    ],
    { cwd: ROOT, stdio: ["ignore", "inherit", "inherit", "ipc"], env: { ...process.env, NODE_ENV: "production" } },
  );
  live.add(child);
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const transitions = new Map<string, (t: { published: bigint; idle: bigint }) => void>();
  let exited = false;
  const exit = new Promise<void>((r) =>
    child.on("exit", () => {
      exited = true;
      live.delete(child);
      for (const p of pending.values()) p.reject(new Error(`bench child ${spec.name} exited`));
      pending.clear();
      r();
    }),
  );

  const ready = new Promise<{ url: string; pid: number }>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`bench child ${spec.name} did not start in ${timeoutMs} ms`)), timeoutMs);
    void exit.then(() => {
      clearTimeout(timer);
      reject(new Error(`bench child ${spec.name} exited before it was ready`));
    });
    child.on("message", (raw) => {
      const m = raw as ChildNotice | ChildReply;
      if ("event" in m) {
        if (m.event === "ready") {
          clearTimeout(timer);
          resolveReady({ url: m.url, pid: m.pid });
        } else if (m.event === "transition") {
          const key = `${m.jobId}|${m.status}`;
          transitions.get(key)?.({ published: BigInt(m.tNs), idle: BigInt(m.idleNs) });
          transitions.delete(key);
        }
        return;
      }
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.ok) p.resolve(m.result);
      else p.reject(new Error(`bench child ${spec.name}: ${m.error}`));
    });
  });
  const { url, pid } = await ready;

  const call = <T>(request: RequestBody): Promise<T> =>
    new Promise<T>((resolveCall, reject) => {
      if (exited) return reject(new Error(`bench child ${spec.name} has exited`));
      const id = nextId++;
      pending.set(id, { resolve: resolveCall as (v: unknown) => void, reject });
      child.send({ ...request, id } as ChildRequest);
    });

  return {
    name: spec.name,
    url,
    pid,
    call,
    memory: (gc = true) => call<MemorySample>({ op: "mem", gc }),
    counts: () => call<ChildCounts>({ op: "counts" }),
    async watchTransition(jobId, status) {
      const arrived = new Promise<{ published: bigint; idle: bigint }>((r) => transitions.set(`${jobId}|${status}`, r));
      await call({ op: "watch", jobId, status });
      return { at: arrived };
    },
    async stop() {
      if (exited) return;
      await Promise.race([call({ op: "stop" }).catch(() => undefined), new Promise((r) => setTimeout(r, 10_000))]);
      const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exit;
      clearTimeout(killer);
    },
  };
}

/** A child process's exit, kill and graceful stop, killed with this process too. */
export interface Supervised {
  /** Resolves once the child exited. */
  exited: Promise<void>;
  /** SIGKILL now. */
  kill(): void;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it exited (at once when it already had). */
  stop(): Promise<void>;
}

/** Supervises a spawned child: it never outlives the bench, and stops gracefully when asked. */
export function supervise(child: ChildProcess): Supervised {
  const kill = () => void child.kill("SIGKILL");
  process.on("exit", kill);
  let gone = false;
  const exited = new Promise<void>((r) =>
    child.on("exit", () => {
      process.off("exit", kill);
      gone = true;
      r();
    }),
  );
  return {
    exited,
    kill,
    async stop() {
      if (gone) return;
      child.kill("SIGTERM");
      const killer = setTimeout(kill, 10_000);
      await exited;
      clearTimeout(killer);
    },
  };
}
