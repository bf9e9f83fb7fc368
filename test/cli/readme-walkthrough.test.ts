// The README's "Walkthrough: the examples" runs as printed against a real server: each `npx flowgate`
// command of the block, in bash from the repository root, with FLOWGATE_BASE_URL pointing at this
// test's server and the block's /tmp/flowgate-demo at a fresh folder. `npx flowgate` is a shell
// function running bin/flowgate.js (npx's own resolution of flowgate in a checkout is run by
// install-noise.test.ts; here it would cost seconds a command). Ctrl-C is a SIGINT to the process
// group, as a terminal sends it.
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { read, shellBlocks, shellStatements } from "../docs/markdown.ts";
import { startTestServer, type TestServer } from "../client/fixtures.ts";
import { BIN, eventually, ROOT } from "./cli.ts";

let server: TestServer;
let demo = "";
beforeAll(async () => {
  server = await startTestServer();
  demo = await mkdtemp(join(tmpdir(), "flowgate-demo-"));
});
afterAll(async () => {
  await server?.stop();
  await rm(demo, { recursive: true, force: true });
});

interface Shell {
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
  stderr(): string;
  /** Ctrl-C: SIGINT to the command's process group. */
  interrupt(): void;
}

/** Runs one statement of the README in bash, in its own process group. */
function shell(statement: string): Shell {
  const npx = `npx() { if [ "$1" = flowgate ]; then shift; "${process.execPath}" "${BIN}" "$@"; else command npx "$@"; fi; }`;
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("FLOWGATE_")));
  const child = spawn("bash", ["-c", `${npx}\n${statement.replaceAll("/tmp/flowgate-demo", demo)}`], {
    cwd: ROOT,
    env: { ...env, FLOWGATE_BASE_URL: server.url, NO_COLOR: "1" },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return {
    exited: new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr }))),
    stderr: () => stderr,
    interrupt: () => process.kill(-child.pid!, "SIGINT"),
  };
}

describe("the README's walkthrough of the examples", () => {
  const block = shellBlocks(read("README.md")).find((b) => b.code.includes("npx flowgate run examples/image-pipeline.json"));
  const statements = shellStatements(block?.code ?? "");

  it("runs each command as printed", { timeout: 180_000 }, async () => {
    expect(block, "the README's walkthrough block").toBeDefined();
    const runs = statements.filter((s) => s.startsWith("npx flowgate run") && !s.includes("delay.json"));
    expect(runs).toHaveLength(4);
    for (const statement of runs) {
      const r = await shell(statement).exited;
      expect(r.code, `${statement}\n${r.stderr}`).toBe(0);
      expect(r.stderr).toMatch(/job \S+ succeeded: \d+ output\(s\)/);
    }
    const files = readdirSync(demo, { recursive: true }).map(String);
    expect(files.some((f) => f.endsWith(".png"))).toBe(true);
    expect(files.some((f) => /^sampler\/previews\/.+\.jpe?g$/.test(f))).toBe(true);
    expect(files.some((f) => f.endsWith(".flac"))).toBe(true);
    expect(files.some((f) => f.endsWith(".webm"))).toBe(true);

    // The delay, canceled with Ctrl-C once it runs; then listed and looked at.
    const delay = shell(statements.find((s) => s.includes("delay.json"))!);
    const id = await eventually(() => /job (\S+) submitted/.exec(delay.stderr())?.[1], "the delay job submitted");
    await eventually(() => (/\] running /.test(delay.stderr()) ? true : undefined), "the delay job running");
    delay.interrupt();
    const canceled = await delay.exited;
    expect(canceled.code, canceled.stderr).toBe(130);
    expect(canceled.stderr).toContain(`job ${id} canceled`);
    const list = await shell(statements.find((s) => s.startsWith("npx flowgate list"))!).exited;
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(id);
    expect(list.stdout).toContain("canceled");
    const status = await shell(statements.find((s) => s.startsWith("npx flowgate status"))!.replace("<job id>", id)).exited;
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain("canceled");
    expect(existsSync(demo)).toBe(true);
  });
});
