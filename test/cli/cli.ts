// Runs the real `flowgate` command (node bin/flowgate.js) as a child process: with pipes (plain
// output), or inside a pseudo-terminal made by util-linux `script` (the progress bar).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const BIN = `${ROOT}bin/flowgate.js`;

/** True when util-linux `script` can give the CLI a pseudo-terminal. */
export const HAS_SCRIPT = spawnSync("script", ["--version"], { encoding: "utf8" }).status === 0;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The environment of a child: this process's, without FLOWGATE_* settings, plus `env`. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("FLOWGATE_")));
  return { ...clean, NO_COLOR: "1", ...env };
}

/** A running CLI process and what it printed so far. */
export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<CliResult>;
}

/** Starts `flowgate ...args` with pipes. */
export function startCli(args: string[], env: Record<string, string> = {}, cwd = ROOT): CliProcess {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<CliResult>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Runs `flowgate ...args` to the end. */
export function runCli(args: string[], env: Record<string, string> = {}, cwd = ROOT): Promise<CliResult> {
  return startCli(args, env, cwd).exited;
}

function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** Runs `flowgate ...args` in a pseudo-terminal; stdout and stderr both land in `stdout`. */
export function runInTerminal(args: string[], env: Record<string, string> = {}, cwd = ROOT): Promise<CliResult> {
  const command = [process.execPath, BIN, ...args].map(shellQuote).join(" ");
  const child = spawn("script", ["-qefc", command, "/dev/null"], {
    cwd,
    env: { ...childEnv(env), COLUMNS: "100", LINES: "30" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
}

/** Polls until `read` gives a value, or fails at the deadline. */
export async function eventually<T>(read: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
