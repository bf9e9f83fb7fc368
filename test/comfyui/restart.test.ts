// flowgate restarted in front of a ComfyUI that kept its queue: every prompt runs once. A prompt
// still waiting there is followed, one finished while flowgate was down is collected, and only a
// prompt ComfyUI never saw is submitted.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ComfyUIEngine } from "../../src/engine/comfyui/index.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { spawnCli } from "../server/helpers.ts";
import { FakeComfyUI } from "./fake-comfyui.ts";
import { call, FAST, TERMINAL, until } from "./helpers.ts";

const OBJECT_INFO = new EmbeddedEngine().nodeDefinitionsSync() as unknown as Record<string, unknown>;

const graph = (text: string) => ({
  "1": { class_type: "PrimitiveString", inputs: { value: text } },
  "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
});

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup.length = 0;
});

/** `flowgate serve --engine comfyui` in a child process, so that it can die by SIGKILL. */
async function serve(dataDir: string, comfyUrl: string, flags: string[] = []) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("FLOWGATE_")) delete env[k];
  const server = await spawnCli(
    [
      "--port",
      "0",
      "--data-dir",
      dataDir,
      "--engine",
      "comfyui",
      "--comfyui-url",
      comfyUrl,
      "--comfyui-output-dir",
      "off",
      "--concurrency",
      "4",
      "--log-level",
      "error",
      ...flags,
    ],
    env,
    { replaceEnv: true },
  );
  const kill = async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL");
    await server.exited;
  };
  cleanup.push(kill);
  return { ...server, kill };
}

describe("flowgate restarted in front of ComfyUI", () => {
  it("runs every prompt once: pending ones are followed, finished ones collected, none submitted again", { timeout: 60_000 }, async () => {
    const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true }).start();
    cleanup.push(() => fake.stop());
    fake.paused = true;
    const dataDir = await mkdtemp(join(tmpdir(), "flowgate-restart-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));

    const first = await serve(dataDir, fake.url);
    const ids: string[] = [];
    for (const text of ["a", "b", "c", "d"]) {
      const res = await call("POST", `${first.url}/api/v2/jobs`, { workflow: graph(text) });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    await until(() => (fake.queue.pending.length === 4 ? true : undefined), "four prompts waiting in ComfyUI");
    await first.kill();

    // ComfyUI works on while flowgate is down: two prompts finish.
    await fake.runNext();
    await fake.runNext();

    const second = await serve(dataDir, fake.url);
    fake.resume();
    const jobs = [];
    for (const id of ids) {
      jobs.push(
        await until(async () => {
          const { body } = await call("GET", `${second.url}/api/v2/jobs/${id}`);
          return TERMINAL.includes(body.status) ? body : undefined;
        }, `job ${id} to end`),
      );
    }
    expect(jobs.map((j) => j.status)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
    expect(Object.fromEntries(fake.executions)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    expect(fake.calls("POST", "/prompt")).toHaveLength(4);
    // The outputs of the prompts finished while flowgate was down were collected from history.
    for (const job of jobs) expect(job.outputs.map((o: any) => o.node_id)).toEqual(["2"]);
  });
});

describe("flowgate stopped (SIGTERM) while ComfyUI runs a prompt and holds others", () => {
  it("leaves them to ComfyUI and follows them again once restarted: each runs once and succeeds, none interrupted", { timeout: 60_000 }, async () => {
    const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true }).start();
    cleanup.push(() => fake.stop());
    fake.holding = true;
    const dataDir = await mkdtemp(join(tmpdir(), "flowgate-restart-term-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const first = await serve(dataDir, fake.url, ["--shutdown-grace", "0"]);
    const ids: string[] = [];
    for (const text of ["x", "y", "z"]) ids.push((await call("POST", `${first.url}/api/v2/jobs`, { workflow: graph(text) })).body.id);
    await until(() => (fake.held !== null && fake.queue.pending.length === 2 ? true : undefined), "one prompt running in ComfyUI, two waiting");
    await until(async () => ((await call("GET", `${first.url}/api/v2/jobs/${fake.held}`)).body.status === "running" ? true : undefined), "its job running");
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    // Nothing was taken back out of ComfyUI: the running prompt runs on, the waiting ones wait.
    expect(fake.calls("POST", "/interrupt")).toEqual([]);
    expect(fake.calls("POST", "/queue")).toEqual([]);
    expect(fake.queue.pending).toHaveLength(2);

    const second = await serve(dataDir, fake.url);
    fake.release();
    for (const id of ids) {
      const job = await until(async () => {
        const { body } = await call("GET", `${second.url}/api/v2/jobs/${id}`);
        return TERMINAL.includes(body.status) ? body : undefined;
      }, `job ${id} to end`);
      expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
      expect(job.outputs.map((o: any) => o.node_id)).toEqual(["2"]);
    }
    expect(Object.fromEntries(fake.executions)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    expect(fake.calls("POST", "/prompt")).toHaveLength(3);
  });
});

describe("flowgate killed while ComfyUI runs a prompt", () => {
  /** A ComfyUI whose prompts stop at their first node while `holding`, and flowgate in front of it with a job running there. */
  async function runningWhenKilled(fail?: { node: string; exception_type: string; exception_message: string }) {
    const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true, fail: () => fail }).start();
    cleanup.push(() => fake.stop());
    fake.holding = true;
    const dataDir = await mkdtemp(join(tmpdir(), "flowgate-restart-running-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const first = await serve(dataDir, fake.url);
    const res = await call("POST", `${first.url}/api/v2/jobs`, { workflow: graph("long") });
    expect(res.status).toBe(201);
    const id: string = res.body.id;
    await until(() => (fake.held === id ? true : undefined), "the prompt running in ComfyUI");
    await until(async () => ((await call("GET", `${first.url}/api/v2/jobs/${id}`)).body.status === "running" ? true : undefined), "the job running");
    await first.kill();
    return { fake, dataDir, id };
  }

  const ended = (base: string, id: string) =>
    until(async () => {
      const { body } = await call("GET", `${base}/api/v2/jobs/${id}`);
      return TERMINAL.includes(body.status) ? body : undefined;
    }, `job ${id} to end`);

  it("collects a prompt that finished while flowgate was down: its outputs, not worker_lost", { timeout: 60_000 }, async () => {
    const { fake, dataDir, id } = await runningWhenKilled();
    fake.release();
    await until(() => (fake.history.has(id) ? true : undefined), "ComfyUI to finish the prompt");

    const second = await serve(dataDir, fake.url);
    const job = await ended(second.url, id);
    expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
    expect(job.outputs.map((o: any) => o.node_id)).toEqual(["2"]);
    const text = await fetch(job.outputs[0].url).then((r) => r.text());
    expect(text).toBe(`${id}:2`);
    expect(fake.executions.get(id)).toBe(1);
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);
  });

  it("follows a prompt still running after the restart to its real end (ComfyUI's error)", { timeout: 60_000 }, async () => {
    const { fake, dataDir, id } = await runningWhenKilled({ node: "2", exception_type: "RuntimeError", exception_message: "boom at node 2" });
    const queueReads = fake.calls("GET", "/queue").length;
    const second = await serve(dataDir, fake.url);
    // The restarted flowgate found the prompt running there (it read the queue) before it goes on.
    await until(
      () => (fake.calls("GET", "/queue").length > queueReads && fake.socketCount === 1 ? true : undefined),
      "the restarted flowgate to look for the prompt",
    );
    expect((await call("GET", `${second.url}/api/v2/jobs/${id}`)).body.status).toBe("running");
    fake.release();
    const job = await ended(second.url, id);
    expect(job.status).toBe("failed");
    expect(job.error).toMatchObject({ code: "node_execution_error", node_id: "2", class_type: "PreviewAny" });
    expect(job.error.message).toContain("boom at node 2");
    expect(fake.executions.get(id)).toBe(1);
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);
  });

  it("records each output once: those recorded before the kill are not recorded again when the rest is collected", { timeout: 60_000 }, async () => {
    const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true }).start();
    cleanup.push(() => fake.stop());
    fake.holding = true;
    fake.holdAt = "3";
    const dataDir = await mkdtemp(join(tmpdir(), "flowgate-restart-outputs-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const first = await serve(dataDir, fake.url);
    const twoOutputs = {
      ...graph("first"),
      "3": { class_type: "PrimitiveString", inputs: { value: "second" } },
      "4": { class_type: "PreviewAny", inputs: { source: ["3", 0] } },
    };
    const id: string = (await call("POST", `${first.url}/api/v2/jobs`, { workflow: twoOutputs })).body.id;
    await until(async () => ((await call("GET", `${first.url}/api/v2/jobs/${id}`)).body.outputs?.length === 1 ? true : undefined), "the first output recorded");
    expect(fake.held).toBe(id);
    await first.kill();
    fake.release();
    await until(() => (fake.history.has(id) ? true : undefined), "ComfyUI to finish the prompt");

    const second = await serve(dataDir, fake.url);
    const job = await ended(second.url, id);
    expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
    expect(job.outputs.map((o: any) => o.node_id).sort()).toEqual(["2", "4"]);
    expect(fake.executions.get(id)).toBe(1);
  });

  it("stops a prompt whose job was canceling when flowgate died: interrupted there, the job canceled", { timeout: 60_000 }, async () => {
    const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true, interruptStatus: 500 }).start();
    cleanup.push(() => fake.stop());
    fake.holding = true;
    const dataDir = await mkdtemp(join(tmpdir(), "flowgate-restart-canceling-"));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const first = await serve(dataDir, fake.url);
    const id: string = (await call("POST", `${first.url}/api/v2/jobs`, { workflow: graph("long") })).body.id;
    await until(() => (fake.held === id ? true : undefined), "the prompt running in ComfyUI");
    await until(async () => ((await call("GET", `${first.url}/api/v2/jobs/${id}`)).body.status === "running" ? true : undefined), "the job running");
    // ComfyUI fails the interrupt this time: the job stays canceling while flowgate waits for the prompt to stop.
    expect((await call("POST", `${first.url}/api/v2/jobs/${id}/cancel`)).body.status).toBe("canceling");
    await until(() => (fake.calls("POST", "/interrupt").length > 0 ? true : undefined), "the interrupt asked");
    await first.kill();

    fake.interruptStatus = 200;
    const interrupts = fake.calls("POST", "/interrupt").length;
    const second = await serve(dataDir, fake.url);
    const job = await ended(second.url, id);
    expect(job.status).toBe("canceled");
    expect(fake.calls("POST", "/interrupt").length).toBeGreaterThan(interrupts);
    expect(fake.held).toBeNull();
    expect(fake.executions.get(id)).toBe(1);
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);
  });

  it("fails worker_lost, without running it again, when ComfyUI no longer holds it (ComfyUI restarted too)", { timeout: 60_000 }, async () => {
    const { fake, dataDir, id } = await runningWhenKilled();
    fake.forget(id);
    const second = await serve(dataDir, fake.url);
    const job = await ended(second.url, id);
    expect(job.status).toBe("failed");
    expect(job.error.code).toBe("worker_lost");
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);
    fake.release();
  });
});

describe("a POST /prompt whose answer was lost", () => {
  async function setup(drop: "before" | "after") {
    let dropped = false;
    const fake = await new FakeComfyUI({
      objectInfo: OBJECT_INFO,
      worker: true,
      dropPrompt: () => {
        if (dropped) return undefined;
        dropped = true;
        return drop;
      },
    }).start();
    cleanup.push(() => fake.stop());
    const engine = new ComfyUIEngine({ ...FAST, urls: [fake.url] });
    cleanup.push(() => engine.close());
    return { fake, engine };
  }

  it("is followed when ComfyUI queued it, never submitted again", async () => {
    const { fake, engine } = await setup("after");
    const result = await engine.execute(graph("x"), { runId: "lost-answer" });
    expect(result.executed).toEqual(["1", "2"]);
    expect(fake.calls("POST", "/prompt")).toHaveLength(1);
    expect(fake.executions.get("lost-answer")).toBe(1);
  });

  it("is submitted again when ComfyUI never got it", async () => {
    const { fake, engine } = await setup("before");
    await engine.execute(graph("x"), { runId: "never-arrived" });
    expect(fake.calls("POST", "/prompt")).toHaveLength(2);
    expect(fake.executions.get("never-arrived")).toBe(1);
  });
});

describe("a prompt that ran while this process did not follow it (taken over), its messages heard on the socket before", () => {
  it("keeps ComfyUI's recorded start and end, not the moment the messages were replayed to its run", async () => {
    const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO }).start();
    cleanup.push(() => fake.stop());
    const engine = new ComfyUIEngine({ ...FAST, urls: [fake.url] });
    cleanup.push(() => engine.close());
    await engine.nodeDefinitions();
    await until(() => (fake.socketCount === 1 ? true : undefined), "the socket");
    // The prompt ran to its end on ComfyUI, its client this process's socket (another process of
    // it posted it, or a stale copy), before this process took its job over.
    const startedAt = Date.now() - 5000;
    const endedAt = startedAt + 1500;
    fake.send("execution_start", { prompt_id: "ran-unfollowed", timestamp: startedAt });
    fake.send("executing", { node: null, prompt_id: "ran-unfollowed" });
    fake.send("execution_success", { prompt_id: "ran-unfollowed", timestamp: endedAt });
    fake.history.set("ran-unfollowed", {
      prompt: [1, "ran-unfollowed", {}, {}, []],
      outputs: {},
      status: {
        status_str: "success",
        completed: true,
        messages: [
          ["execution_start", { prompt_id: "ran-unfollowed", timestamp: startedAt }],
          ["execution_success", { prompt_id: "ran-unfollowed", timestamp: endedAt }],
        ],
      },
    });
    const times: unknown[] = [];
    await engine.execute(graph("x"), { runId: "ran-unfollowed", onRecordedTimes: (t) => void times.push(t) });
    expect(fake.calls("POST", "/prompt")).toHaveLength(0);
    expect(times).toEqual([{ startedAt, endedAt }]);
  });
});

describe("an instance that stops answering", () => {
  it("gives a prompt that never started there to another instance, and deletes it there when it is back", { timeout: 30_000 }, async () => {
    const a = await new FakeComfyUI({ objectInfo: OBJECT_INFO }).start();
    cleanup.push(() => a.stop());
    const b = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true }).start();
    cleanup.push(() => b.stop());
    // B is busier at first, so the prompt goes to A, where it waits.
    b.paused = true;
    b.queue.pending.push("someone-else");
    const engine = new ComfyUIEngine({ ...FAST, urls: [a.url, b.url], reassignAfterMs: 300, lostAfterMs: 60_000 });
    cleanup.push(() => engine.close());
    await engine.nodeDefinitions();
    await until(() => (a.socketCount === 1 && b.socketCount === 1 ? true : undefined), "both sockets");
    const result = engine.execute(graph("moved"), { runId: "moved" });
    await until(() => (a.queue.pending.includes("moved") ? true : undefined), "the prompt waiting on A");

    const port = Number(new URL(a.url).port);
    await a.stop();
    b.resume();
    const done = await result;
    expect(done.executed).toEqual(["1", "2"]);
    expect(b.executions.get("moved")).toBe(1);
    expect(a.calls("POST", "/prompt")).toHaveLength(1);

    // A comes back with the prompt still queued: it is deleted there, so it never runs twice.
    const back = new FakeComfyUI({ objectInfo: OBJECT_INFO });
    back.queue.pending.push("moved");
    await back.start(port);
    cleanup.push(() => back.stop());
    await until(() => (back.calls("POST", "/queue").some((r) => r.json?.delete?.includes("moved")) ? true : undefined), "the prompt deleted on A");
    expect(back.queue.pending).toEqual([]);
  });
});
