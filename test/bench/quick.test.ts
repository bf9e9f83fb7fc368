// CI smoke test of the performance harness: `bench/run.ts --quick` runs every scenario with tiny
// sizes, prints the markdown table and writes its results file. Targets are not checked here
// (a shared CI machine proves nothing about speed); the full bench is run by hand (bench/RESULTS.md).
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
let dir: string | undefined;

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function runQuick(out: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ["--import", "tsx", "bench/run.ts", "--quick", "--out", out], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 170_000);
    child.on("error", fail);
    child.on("exit", (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

describe("npm run bench -- --quick", () => {
  it("runs every scenario, prints the table and writes the results", { timeout: 180_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), "flowgate-bench-test-"));
    const out = join(dir, "results.json");
    const { code, stdout, stderr } = await runQuick(out);
    expect(code, `bench --quick failed:\n${stderr.slice(-4000)}`).toBe(0);
    expect(stdout).toContain("| scenario | figure | measured (median) | baseline (same run) | ratio | target | result |");

    const results = JSON.parse(await readFile(out, "utf8"));
    expect(results.mode).toBe("quick");
    expect(results.failed).toEqual([]);
    expect(results.scenarios).toEqual(["engine", "hash", "labels", "http", "sse", "memory", "comfyui", "heavy", "postgres", "blobs"]);
    const names: string[] = results.figures.map((f: { scenario: string }) => f.scenario);
    // Without a PostgreSQL server the postgres scenario is skipped with a warning (never on CI, which starts one).
    const pgSkipped = (results.warnings as string[]).some((w) => w.startsWith("postgres: skipped"));
    if (process.env.CI) expect(pgSkipped, "PostgreSQL must answer on CI").toBe(false);
    const pgParts = pgSkipped
      ? []
      : [
          "PostgreSQL: POST /api/v2/jobs",
          "PostgreSQL: GET /api/v2/jobs/{id}, finished job",
          "PostgreSQL: SSE fan-out across processes",
          "(PostgreSQL), filtered by one label",
        ];
    for (const part of [
      "GET /api/v2/jobs/{id}",
      "POST /api/v2/jobs",
      "Queue depth",
      "submit",
      "SSE fan-out",
      "Engine: validate",
      "scheduling overhead",
      "Hashing",
      "filtered by one label",
      "Memory over completed jobs",
      "ComfyUI backend",
      "/healthz while the largest job",
      "Blob store",
      ...pgParts,
    ]) {
      expect(
        names.some((n) => n.includes(part)),
        `a figure for "${part}"`,
      ).toBe(true);
    }
    for (const f of results.figures) {
      // Every figure was measured, and every ratio comes from a baseline of the same run.
      expect(typeof f.value, `${f.scenario} / ${f.metric}`).toBe("number");
      expect(Number.isFinite(f.value), `${f.scenario} / ${f.metric}`).toBe(true);
      if (f.ratio !== undefined) expect(f.baseline, `${f.scenario} / ${f.metric}`).toBeDefined();
    }
  });
});
