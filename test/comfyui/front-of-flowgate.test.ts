// flowgate in front of flowgate (#43 defect 2): the upstream honours the front's prompt_id, so a
// front killed and restarted finds each of its prompts there by its own id and never submits one
// again: every prompt runs once upstream, under the front's job id.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { spawnCli } from "../server/helpers.ts";
import { call, startUpstream, TERMINAL, until } from "./helpers.ts";

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup.length = 0;
});

/** `flowgate serve --engine comfyui` in front of `upstream`, in a child process, so that it can die by SIGKILL. */
async function front(dataDir: string, upstream: string) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("FLOWGATE_")) delete env[k];
  const flags = ["--port", "0", "--data-dir", dataDir, "--engine", "comfyui", "--comfyui-url", upstream, "--comfyui-output-dir", "off", "--log-level", "error"];
  const server = await spawnCli(flags, env, { replaceEnv: true });
  const kill = async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL");
    await server.exited;
  };
  cleanup.push(kill);
  return { ...server, kill };
}

const graph = (text: string) => ({
  "1": { class_type: "PrimitiveString", inputs: { value: text } },
  "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds: 1 } },
  "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
});

describe("flowgate in front of flowgate", () => {
  it("runs each prompt once upstream, under the front's job id, across a SIGKILL of the front", { timeout: 90_000 }, async () => {
    const upstream = await startUpstream({ flags: ["--concurrency", "1"] });
    cleanup.push(() => upstream.stop());
    const dataDir = await mkdtemp(join(tmpdir(), "flowgate-front-of-flowgate-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));

    const first = await front(dataDir, upstream.url);
    const ids: string[] = [];
    for (const text of ["a", "b", "c"]) {
      const res = await call("POST", `${first.url}/api/v2/jobs`, { workflow: graph(text) });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    // Every prompt reached the upstream, under the front's job id, before the front dies.
    const upstreamIds = async () => ((await call("GET", `${upstream.url}/api/jobs?limit=100`)).body.jobs as Array<{ id: string }>).map((j) => j.id);
    await until(async () => {
      const there = await upstreamIds();
      return ids.every((id) => there.includes(id)) ? true : undefined;
    }, "the three prompts upstream");
    await first.kill();

    const second = await front(dataDir, upstream.url);
    for (const id of ids) {
      const job = await until(
        async () => {
          const { body } = await call("GET", `${second.url}/api/v2/jobs/${id}`);
          return TERMINAL.includes(body.status) ? body : undefined;
        },
        `job ${id} to end`,
        60_000,
      );
      expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
    }
    // One run upstream per prompt: three jobs there, each completed, none queued again.
    const listed = (await call("GET", `${upstream.url}/api/jobs?limit=100`)).body as {
      jobs: Array<{ id: string; status: string }>;
      pagination: { total: number };
    };
    expect(listed.pagination.total).toBe(3);
    expect(listed.jobs.map((j) => j.id).sort()).toEqual([...ids].sort());
    expect(listed.jobs.every((j) => j.status === "completed")).toBe(true);
  });
});
