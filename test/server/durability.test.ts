// Durability across a crash: the real CLI (`node bin/flowgate.js serve`) is killed with SIGKILL
// mid-run and restarted on the same data dir. The job row was committed before its 201; the
// running job ends failed with worker_lost; the queued ones run to succeeded.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Api, delayGraph, expectValid, imageGraph, spawnCli, v, type CliServer } from "./helpers.ts";

const children: CliServer[] = [];
let dataDir = "";
afterAll(async () => {
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill("SIGKILL");
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("a crash and a restart", () => {
  it("JOB-3 ST-4 the running job fails with worker_lost, queued jobs run, nothing accepted is lost", async () => {
    dataDir = await mkdtemp(join(tmpdir(), "flowgate-durability-"));
    const args = ["--data-dir", dataDir, "--port", "0", "--concurrency", "1"];
    const first = await spawnCli(args);
    children.push(first);
    const api = new Api(first.url);
    const running = await api.submit(delayGraph(120));
    const startedAt = (await api.waitJob(running.id, (j) => j.status === "running", "running")).started_at;
    const queued = await api.submit(imageGraph("after-crash"));
    expect(queued.status).toBe("queued");
    // Killed right after its 201: the row must already be on disk.
    const last = await api.submit(imageGraph("last-before-crash"));
    first.child.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");

    const second = await spawnCli(args);
    children.push(second);
    const again = new Api(second.url);
    const lost = await again.waitTerminal(running.id);
    expect(lost.status).toBe("failed");
    expectValid(v.schema_JobError, lost.error);
    expect(lost.error.code).toBe("worker_lost");
    expect(lost.completed_at).not.toBeNull();
    expect(lost.started_at).toBe(startedAt);
    for (const id of [queued.id, last.id]) {
      const done = await again.waitTerminal(id);
      expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
      expect(done.outputs).toHaveLength(1);
      expect((await fetch(done.outputs[0].url)).status).toBe(200);
    }
    // The failed job stays failed: cancel changes nothing.
    const cancel = await again.post(`/api/v2/jobs/${running.id}/cancel`);
    expect(cancel.status).toBe(200);
    expect(cancel.body.status).toBe("failed");
    // Signed links survive the restart (the key is kept per data dir).
    const outputs = (await again.job(queued.id)).outputs;
    expect((await fetch(outputs[0].url)).status).toBe(200);

    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });
});
