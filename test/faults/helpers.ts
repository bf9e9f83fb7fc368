// Shared pieces of the fault suite: temp data dirs, real `flowgate serve` children that are
// always killed at the end, and a deadline on a child's exit.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCli, type CliProcess, type CliResult } from "../cli/cli.ts";
import { spawnCli, type CliServer } from "../server/helpers.ts";

/** Children and directories of one test file, cleaned up by `cleanup()` (call it in afterAll). */
export class FaultFixtures {
  private readonly servers: CliServer[] = [];
  private readonly processes: CliProcess[] = [];
  private readonly dirs: string[] = [];

  /** A fresh data directory, removed at cleanup. */
  async dataDir(prefix = "flowgate-faults-"): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    this.dirs.push(dir);
    return dir;
  }

  /** `flowgate serve ...args`, once it listens. */
  async serve(args: string[]): Promise<CliServer> {
    const server = await spawnCli(args, { FLOWGATE_LOG_LEVEL: "warn" });
    this.servers.push(server);
    return server;
  }

  /** `flowgate ...args` without waiting for anything. */
  start(args: string[]): CliProcess {
    const p = startCli(args);
    this.processes.push(p);
    return p;
  }

  /** Kills every child still alive and removes the directories. */
  async cleanup(): Promise<void> {
    for (const s of this.servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill("SIGKILL");
    for (const p of this.processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    await Promise.all([...this.servers.map((s) => s.exited), ...this.processes.map((p) => p.exited)]);
    for (const dir of this.dirs) await rm(dir, { recursive: true, force: true, maxRetries: 5 });
  }
}

/** The child's end, or "still running" once `ms` passed (the child is left to cleanup). */
export function exitWithin(p: CliProcess, ms: number): Promise<CliResult | "still running"> {
  return Promise.race([p.exited, new Promise<"still running">((r) => setTimeout(() => r("still running"), ms).unref())]);
}
