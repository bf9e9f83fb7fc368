// SIGKILL loops with the real CLI: the server is killed mid-work a few times on one data
// directory and restarted each time (the lock dies with the process). Every job that got its
// 201 is still there, none stays running, the ones killed mid-run end worker_lost, the rest run
// to the end with downloadable outputs, and no partial blob file survives.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Api, delayGraph, imageGraph } from "../server/helpers.ts";
import { FaultFixtures } from "./helpers.ts";

const fx = new FaultFixtures();
afterAll(() => fx.cleanup());

const KILLS = 3;

describe("SIGKILL loops", () => {
  it(`${KILLS} kills mid-work lose no accepted job and leave none running`, async () => {
    const dataDir = await fx.dataDir();
    const args = ["--data-dir", dataDir, "--port", "0", "--concurrency", "2"];
    const accepted: string[] = [];
    const longJobs = new Set<string>();
    for (let round = 0; round < KILLS; round++) {
      const server = await fx.serve(args);
      const api = new Api(server.url);
      const long = await api.submit(delayGraph(60));
      accepted.push(long.id);
      longJobs.add(long.id);
      // A burst of quick jobs with outputs, some committing when the kill comes.
      const burst = await Promise.all(Array.from({ length: 6 }, (_, i) => api.submit(imageGraph(`round${round}-${i}`))));
      accepted.push(...burst.map((j) => j.id));
      await api.waitJob(long.id, (j) => j.status === "running", "running");
      server.child.kill("SIGKILL");
      expect(await server.exited).toBe("SIGKILL");
    }

    const last = await fx.serve(args);
    const api = new Api(last.url);
    for (const id of accepted) {
      const job = await api.waitTerminal(id, 30_000);
      if (job.status === "failed" || longJobs.has(id)) {
        // Killed mid-run (every long job was): never re-run, ended by the next start.
        expect(job.status).toBe("failed");
        expect(job.error.code).toBe("worker_lost");
        expect(job.started_at).not.toBeNull();
      } else {
        expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
        expect(job.outputs.length).toBeGreaterThan(0);
        for (const output of job.outputs) expect((await fetch(output.url)).status).toBe(200);
      }
    }
    expect(await readdir(join(dataDir, "blobs", "tmp")), "partial blobs of dead writers are removed at start").toEqual([]);
    last.child.kill("SIGTERM");
    expect(await last.exited).toBe(0);
  });

  it("a job killed the moment it is seen succeeded is succeeded after the restart, its last outputs with it", async () => {
    const dataDir = await fx.dataDir();
    const args = ["--data-dir", dataDir, "--port", "0"];
    const first = await fx.serve(args);
    // Two output nodes: the first's record is written as it comes, the last's with the end.
    const graph = { ...imageGraph("kill-first"), ...Object.fromEntries(Object.entries(imageGraph("kill-last")).map(([id, node]) => [`1${id}`, node])) };
    (graph["12"] as { inputs: { images: unknown[] } }).inputs.images = ["11", 0];
    const job = await new Api(first.url).submit(graph);
    const seen = await new Api(first.url).waitTerminal(job.id);
    first.child.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    expect(seen.status).toBe("succeeded");

    const again = await fx.serve(args);
    const after = await new Api(again.url).waitTerminal(job.id);
    expect(after.status).toBe("succeeded");
    expect(after.outputs.map((o: { id: string }) => o.id).sort()).toEqual(seen.outputs.map((o: { id: string }) => o.id).sort());
    expect(after.outputs).toHaveLength(2);
    for (const output of after.outputs) expect((await fetch(output.url)).status).toBe(200);
    again.child.kill("SIGTERM");
    expect(await again.exited).toBe(0);
  });
});
