// A real `flowgate worker` process (bin/flowgate.js, as an operator starts it), for scenarios that
// need jobs run by another process than the API node's. No IPC: it is told what to do by flags only.
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { childNodeFlags, ROOT, SERVER_NODE_FLAGS, supervise } from "./child.ts";

/** A running worker. */
export interface WorkerProcess {
  pid: number;
  /** Everything it printed so far. */
  output(): string;
  /** SIGTERM, then SIGKILL if it has not exited within 10 s. */
  stop(): Promise<void>;
}

/** Starts `flowgate worker <args>` and waits until it claims jobs. */
export async function startWorker(args: string[], timeoutMs = 60_000): Promise<WorkerProcess> {
  // The worker reads FLOWGATE_* variables too: only its flags configure it here.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("FLOWGATE_")));
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...childNodeFlags, resolve(ROOT, "bin/flowgate.js"), "worker", ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...env, NODE_ENV: "production" },
  });
  const { exited, kill, stop } = supervise(child);
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const started = new Promise<void>((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`flowgate worker did not start in ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const check = () => {
      if (!out.includes("worker claiming jobs")) return;
      clearTimeout(timer);
      ready();
    };
    child.stdout.on("data", check);
    void exited.then(() => {
      clearTimeout(timer);
      fail(new Error(`flowgate worker exited before it claimed jobs:\n${out}`));
    });
  });
  try {
    await started;
  } catch (err) {
    kill();
    await exited;
    throw err;
  }
  return {
    pid: child.pid!,
    output: () => out,
    stop,
  };
}
