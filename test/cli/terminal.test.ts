// `flowgate run` in a pseudo-terminal (util-linux `script`): the progress bar is redrawn in
// place and shows node, step, percent, elapsed and remaining time.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { samplerGraph, startTestServer, type TestServer } from "../client/fixtures.ts";
import { HAS_SCRIPT, runCli, runInTerminal } from "./cli.ts";

let server: TestServer;
let dir: string;
beforeAll(async () => {
  server = await startTestServer();
  dir = await mkdtemp(join(tmpdir(), "flowgate-tty-"));
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

// Each redraw starts with a carriage return and an erase-line sequence.
const REDRAW = "\r\x1b[2K";

describe.skipIf(!HAS_SCRIPT)("flowgate run on a terminal", () => {
  it("draws a bar with node, step, percent, elapsed and remaining time, redrawn in place", async () => {
    const graph = join(dir, "sampler.json");
    await writeFile(graph, JSON.stringify(samplerGraph(600, 16)));
    const r = await runInTerminal(["run", graph, "--no-download", "--base-url", server.url]);
    expect(r.code, r.stdout).toBe(0);
    const frames = r.stdout
      .split(REDRAW)
      .slice(1)
      .map((f) => f.replace(/\r?\n.*$/s, ""));
    expect(frames.length, r.stdout).toBeGreaterThan(2);
    const mid = frames.find((f) => /step \d+\/600/.test(f));
    expect(mid, frames.join("\n")).toBeDefined();
    expect(mid).toMatch(/^running \[#*\.*\] +\d+% {2}node 1( FlowgateSampler)? {2}step \d+\/600 {2}\d+:\d\d elapsed/);
    // The remaining-time estimate needs a second of running, which a loaded machine may not give
    // this job; when it is drawn it has its place at the end (progress-view.test.ts covers it).
    for (const f of frames) if (f.includes("left")) expect(f).toMatch(/ ~\d+:\d\d left$/);
    expect(frames.at(-1)).toMatch(/^succeeded \[#+\] +100%/);
    expect(frames.every((f) => f.length <= 99)).toBe(true);
  });

  it("draws no bar when told --progress plain, even on a terminal", async () => {
    const r = await runInTerminal(["run", "examples/audio.json", "--no-download", "--progress", "plain", "--base-url", server.url]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).not.toContain(REDRAW);
    expect(r.stdout).toMatch(/\] succeeded 100%/);
  });

  it("and without a terminal the default is plain lines", async () => {
    const r = await runCli(["run", "examples/audio.json", "--no-download", "--base-url", server.url]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain(REDRAW);
  });
});
