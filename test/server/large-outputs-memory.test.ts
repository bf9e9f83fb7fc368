// A `flowgate serve` process (a child, so that its memory is its own) that ran large-output jobs
// goes back to the resident memory it had after the first one: the storage of a finished job's
// tensors is freed before its end is recorded, so the measure is taken when the job is terminal,
// not after some time. Before, every 4096x4096 job left its 240 MB of tensors allocated.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, spawnCli, type CliServer } from "./helpers.ts";

const MB = 1024 * 1024;
const SIDE = 4096;
/** What one job's tensors take: the float image (192 MB) and its 8-bit frame (48 MB). */
const JOB_TENSORS = SIDE * SIDE * 3 * 5;
/** Growth allowed over the level after the first job: well under what one job's tensors take. */
const MARGIN = 128 * MB;

function residentBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024;
}

function largeOutput(seed: number) {
  return {
    // A colour per job, so that no job is served from the cache.
    "1": { class_type: "EmptyImage", inputs: { width: SIDE, height: SIDE, batch_size: 1, color: seed * 7919 } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "large" } },
  };
}

describe.skipIf(process.platform !== "linux")("resident memory of a server after large outputs", () => {
  let dataDir: string;
  let server: CliServer;
  let api: Api;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "flowgate-large-outputs-"));
    server = await spawnCli(["--data-dir", dataDir, "--port", "0", "--shutdown-grace", "0"]);
    api = new Api(server.url);
  });
  afterAll(async () => {
    server?.child.kill("SIGKILL");
    await server?.exited;
    await rm(dataDir, { recursive: true, force: true });
  });

  it(`returns near its level after the first of five ${SIDE}x${SIDE} jobs (within ${MARGIN / MB} MB)`, async () => {
    const pid = server.child.pid!;
    const levels: number[] = [];
    for (let i = 1; i <= 5; i++) {
      const job = await api.submit(largeOutput(i));
      const done = await api.waitTerminal(job.id, 300_000);
      expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
      levels.push(residentBytes(pid));
    }
    console.info(`resident memory after each job (MB): ${levels.map((b) => (b / MB).toFixed(0)).join(", ")}`);
    const [first, ...rest] = levels as [number, ...number[]];
    for (const level of rest) expect((level - first) / MB).toBeLessThan(MARGIN / MB);
    // Five jobs' tensors held would be well over a gigabyte; the margin is a fraction of one job's.
    expect(MARGIN).toBeLessThan(JOB_TENSORS);
  });
});
