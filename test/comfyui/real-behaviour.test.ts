// The comfyui backend against what a real ComfyUI does that the first double did not: node
// definitions with `display_name: null`, POST /interrupt answering 404, sockets closed while
// idle, and prompts waiting in ComfyUI's own queue behind other clients' work.
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { cloneJson } from "../../src/domain/exact-json.ts";
import { ComfyUIEngine, type ComfyUIEngineOptions } from "../../src/engine/comfyui/index.ts";
import { reconnectDelay } from "../../src/engine/comfyui/socket.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { EngineError, ExecutionCancelledError } from "../../src/engine/errors.ts";
import { FakeComfyUI, type FakeOptions } from "./fake-comfyui.ts";
import { call, FAST, recorder, startFront, textGraph, until, waitJob, type Front } from "./helpers.ts";

const OBJECT_INFO = new EmbeddedEngine().nodeDefinitionsSync() as unknown as Record<string, unknown>;

const DELAY_GRAPH = {
  "1": { class_type: "PrimitiveString", inputs: { value: "a" } },
  "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds: 30 } },
  "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
};

let fakes: FakeComfyUI[] = [];
let engines: ComfyUIEngine[] = [];
let fronts: Front[] = [];

afterEach(async () => {
  for (const f of fronts) await f.stop();
  fronts = [];
  for (const e of engines) await e.close();
  for (const f of fakes) await f.stop();
  engines = [];
  fakes = [];
});

async function setup(fakeOptions: Partial<FakeOptions> = {}, engineOptions: Partial<ComfyUIEngineOptions> = {}) {
  const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, ...fakeOptions }).start();
  fakes.push(fake);
  const engine = new ComfyUIEngine({ ...FAST, ...engineOptions, urls: [fake.url] });
  engines.push(engine);
  return { fake, engine };
}

/** A reconnect scheduler the test steps through by hand: no timer, no waiting. */
function steppedReconnects() {
  const delays: number[] = [];
  const due: Array<() => void> = [];
  return {
    delays,
    schedule: (reconnect: () => void, delayMs: number) => {
      delays.push(delayMs);
      due.push(reconnect);
    },
    async next(what: string) {
      const run = await until(() => due.shift(), what);
      run();
    },
  };
}

describe("comfyui backend against real ComfyUI behaviour", () => {
  it("display_name null (newer ComfyUI nodes) is served as the class name, as ComfyUI's frontend shows it", async () => {
    const info = cloneJson(OBJECT_INFO) as Record<string, Record<string, unknown>>;
    info.ImageInvert!.display_name = null;
    delete info.EmptyImage!.display_name;
    const { engine } = await setup({ objectInfo: info });
    const defs = (await engine.nodeDefinitions()) as unknown as Record<string, Record<string, unknown>>;
    expect(defs.ImageInvert!.display_name).toBe("ImageInvert");
    expect(defs.EmptyImage!.display_name).toBe("EmptyImage");
    expect(defs.SaveImage!.display_name).toBe((OBJECT_INFO.SaveImage as Record<string, unknown>).display_name);
  });

  it("output_is_list [null] (ComfyUI's V3 text nodes) is served as false, as the contract's booleans", async () => {
    const info = cloneJson(OBJECT_INFO) as Record<string, Record<string, unknown>>;
    info.ImageInvert!.output_is_list = [null];
    const { engine } = await setup({ objectInfo: info });
    const defs = (await engine.nodeDefinitions()) as unknown as Record<string, Record<string, unknown>>;
    expect(defs.ImageInvert!.output_is_list).toEqual([false]);
    expect(v.schema_HostedNodeDefinitions(defs), JSON.stringify(v.schema_HostedNodeDefinitions.errors)).toBe(true);
  });

  it("the socket offers no permessage-deflate, which ComfyUI's aiohttp accepts: every message would be inflated", async () => {
    const { fake, engine } = await setup();
    await engine.nodeDefinitions();
    await until(() => (fake.socketCount === 1 ? true : undefined), "the connection");
    expect(fake.offeredExtensions).toEqual([""]);
  });

  it("reconnect waits grow exponentially with jitter up to the cap", () => {
    expect([0, 1, 2, 3, 4, 5, 40].map((a) => reconnectDelay(a, 100, 1000, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
    expect([0, 1, 2, 3, 4, 5].map((a) => reconnectDelay(a, 100, 1000, () => 0))).toEqual([50, 100, 200, 400, 500, 500]);
  });

  it("a socket ComfyUI closes while idle reconnects with a growing wait and keeps the cached definitions", async () => {
    const stepper = steppedReconnects();
    const { fake, engine } = await setup({}, { reconnectMinMs: 100, reconnectMaxMs: 1000, socket: { random: () => 1, schedule: stepper.schedule } });
    await engine.nodeDefinitions();
    await until(() => (fake.socketCount === 1 ? true : undefined), "the first connection");
    fake.closeIdleSockets = true;
    fake.dropSockets();
    for (let i = 0; i < 6; i++) await stepper.next(`reconnect ${i + 1}`);
    await until(() => (stepper.delays.length === 7 ? true : undefined), "the seventh close");
    // Every connection closed at once: the backoff never reset.
    expect(stepper.delays).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
    expect(fake.connections.length).toBe(7);
    expect(fake.calls("GET", "/object_info")).toHaveLength(1);
    await engine.nodeDefinitions();
    expect(fake.calls("GET", "/object_info")).toHaveLength(1);
  });

  it("after an outage (a connect attempt failed) the reconnect refetches the definitions: ComfyUI may have restarted", async () => {
    const stepper = steppedReconnects();
    const { fake, engine } = await setup({}, { socket: { random: () => 1, schedule: stepper.schedule } });
    await engine.nodeDefinitions();
    await until(() => (fake.socketCount === 1 ? true : undefined), "the first connection");
    const port = Number(new URL(fake.url).port);
    await fake.stop();
    await stepper.next("the reconnect after the stop");
    await until(() => (stepper.delays.length === 2 ? true : undefined), "the failed attempt");
    const again = await new FakeComfyUI({ objectInfo: OBJECT_INFO }).start(port);
    fakes.push(again);
    // No scheduled reconnect runs: the instance answering HTTP (a readiness probe) reconnects at once.
    expect(await engine.ready()).toBe(true);
    await until(() => (again.calls("GET", "/object_info").length === 1 ? true : undefined), "the refetch of object_info");
  });

  it("a cancel ComfyUI refused (POST /interrupt 404) is not reported until the prompt left ComfyUI's queue", async () => {
    const { fake, engine } = await setup({ interruptStatus: 404 }, { cancelWaitMs: 60_000 });
    const controller = new AbortController();
    let settled = false;
    const result = engine.execute(DELAY_GRAPH, { ...recorder().options, signal: controller.signal });
    void result.catch(() => undefined).finally(() => (settled = true));
    const { prompt_id: id } = await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id });
    controller.abort();
    await until(() => (fake.calls("POST", "/interrupt").length > 0 ? true : undefined), "the interrupt");
    // The run keeps reading the queue; while the prompt runs there, the cancel is not done.
    const reads = fake.calls("GET", "/queue").length;
    await until(() => (fake.calls("GET", "/queue").length >= reads + 3 ? true : undefined), "more queue reads");
    expect(settled).toBe(false);
    // The prompt ends upstream on its own (nobody interrupted it): now the cancel is over.
    fake.finish(id, { outputs: {}, status: { status_str: "success", completed: true, messages: [] } });
    const err = await result.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ExecutionCancelledError);
  });

  it("a cancel ComfyUI never confirms ends after cancelWaitMs (the documented bound)", async () => {
    const { fake, engine } = await setup({ interruptStatus: 404 }, { cancelWaitMs: 300 });
    const controller = new AbortController();
    const result = engine.execute(DELAY_GRAPH, { ...recorder().options, signal: controller.signal });
    const { prompt_id: id } = await fake.nextPrompt();
    fake.startRunning(id);
    controller.abort();
    const err = await result.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ExecutionCancelledError);
    expect(fake.queue.running).toContain(id);
  });

  it("a job is queued while its prompt waits in ComfyUI's queue, with what is ahead there counted; running from execution_start", async () => {
    const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, interruptStatus: 404 }).start();
    fakes.push(fake);
    // Another client's work: one prompt running, one pending.
    fake.queue.running.push("other-1");
    fake.queue.pending.push("other-2");
    const front = await startFront([fake.url], ["--concurrency", "2"], { cancelWaitMs: 60_000 });
    fronts.push(front);
    const submit = async () => {
      const res = await call("POST", `${front.url}/api/v2/jobs`, { workflow: DELAY_GRAPH });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.id as string;
    };
    const a = await submit();
    await until(() => (fake.queue.pending.includes(a) ? true : undefined), "A in ComfyUI's queue");
    const b = await submit();
    await until(() => (fake.queue.pending.includes(b) ? true : undefined), "B in ComfyUI's queue");
    const c = await submit(); // the two slots are taken: C waits in flowgate's own queue
    const job = (id: string) => call("GET", `${front.url}/api/v2/jobs/${id}`).then((r) => r.body);
    // other-1 runs and other-2 waits ahead of A; A is ahead of B; everything upstream is ahead of C.
    await waitJob(front.url, a, (j) => j.status === "queued" && j.queue_position === 2, "A queued at 2");
    await waitJob(front.url, b, (j) => j.status === "queued" && j.queue_position === 3, "B queued at 3");
    expect(await job(c)).toMatchObject({ status: "queued", queue_position: 4 });
    expect((await job(a)).started_at).toBeNull();

    // ComfyUI's worker takes A.
    fake.finish("other-1", { outputs: {}, status: { status_str: "success", completed: true, messages: [] } });
    fake.finish("other-2", { outputs: {}, status: { status_str: "success", completed: true, messages: [] } });
    fake.startRunning(a);
    fake.send("execution_start", { prompt_id: a });
    const running = await waitJob(front.url, a, (j) => j.status === "running", "A running");
    expect(running.started_at).not.toBeNull();
    expect(running.queue_position).toBeNull();
    await waitJob(front.url, b, (j) => j.status === "queued" && j.queue_position === 1, "B behind A");

    // B is canceled while it waits upstream: it is deleted from ComfyUI's queue.
    expect((await call("POST", `${front.url}/api/v2/jobs/${b}/cancel`)).body.status).toBe("canceled");
    await until(() => (fake.calls("POST", "/queue").some((r) => r.json?.delete?.includes(b)) ? true : undefined), "B deleted upstream");
    expect(fake.queue.pending).not.toContain(b);
    expect(fake.calls("POST", "/interrupt").filter((r) => r.json?.prompt_id === b)).toHaveLength(0);

    // A is canceled while running on a ComfyUI that refuses POST /interrupt: canceling until it ends there.
    expect((await call("POST", `${front.url}/api/v2/jobs/${a}/cancel`)).body.status).toBe("canceling");
    await until(() => (fake.calls("POST", "/interrupt").some((r) => r.json?.prompt_id === a) ? true : undefined), "the interrupt of A");
    const reads = fake.calls("GET", "/queue").length;
    await until(() => (fake.calls("GET", "/queue").length >= reads + 3 ? true : undefined), "more queue reads");
    expect((await job(a)).status).toBe("canceling");
    fake.finish(a, { outputs: {}, status: { status_str: "success", completed: true, messages: [] } });
    await waitJob(front.url, a, (j) => j.status === "canceled", "A canceled");
  });

  it("an end seen live keeps the time it was seen while ComfyUI writes its history late", async () => {
    const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO }).start();
    fakes.push(fake);
    const front = await startFront([fake.url]);
    fronts.push(front);
    const res = await call("POST", `${front.url}/api/v2/jobs`, { workflow: DELAY_GRAPH });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const { prompt_id: id } = await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id, timestamp: Date.now() });
    await waitJob(front.url, id, (j) => j.status === "running", "the job running");
    const error = {
      prompt_id: id,
      node_id: "2",
      node_type: "FlowgateDelay",
      exception_type: "RuntimeError",
      exception_message: "boom",
      traceback: [],
      executed: [],
    };
    const endedAt = Date.now();
    fake.send("execution_error", { ...error, current_inputs: {}, current_outputs: {}, timestamp: endedAt });
    // An error sends the front to history for the end's details; ComfyUI writes it only once its
    // worker is done (collecting garbage may take seconds): the front asks a few times first.
    const asked = fake.calls("GET", `/history/${id}`).length;
    await until(() => (fake.calls("GET", `/history/${id}`).length >= asked + 3 ? true : undefined), "the front asking history");
    const written = Date.now();
    fake.finish(id, { outputs: {}, status: { status_str: "error", completed: false, messages: [["execution_error", { ...error, timestamp: endedAt }]] } });
    const job = await waitJob(front.url, id, (j) => j.status === "failed", "the job failed");
    expect(job.error.message).toContain("boom");
    expect(Date.parse(job.completed_at)).toBeLessThan(written);
  });

  it("a success whose cached output node sent no `executed` is completed from history", async () => {
    const { fake, engine } = await setup();
    const png = Buffer.from("\x89PNG cached");
    fake.files.set("output//c_00001_.png", { bytes: png, contentType: "image/png" });
    const rec = recorder();
    const graph = {
      "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "c" } },
    };
    const result = engine.execute(graph, rec.options);
    const { prompt_id: id } = await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id });
    fake.send("execution_cached", { nodes: ["1", "2"], prompt_id: id });
    fake.finish(id, {
      outputs: { "2": { images: [{ filename: "c_00001_.png", subfolder: "", type: "output" }] } },
      status: { status_str: "success", completed: true, messages: [] },
    });
    fake.send("execution_success", { prompt_id: id });
    const done = await result;
    expect(fake.calls("GET", `/history/${id}`).length).toBeGreaterThan(0);
    expect(done.outputs.map((o) => o.name)).toEqual(["c_00001_.png"]);
  });

  it("the double, like ComfyUI, runs a prompt id queued twice twice, each copy to the client that queued it", async () => {
    const { fake } = await setup({ worker: true });
    fake.paused = true;
    const prompt = { "1": { class_type: "PrimitiveString", inputs: { value: "a" } }, "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } };
    const post = (client: string) =>
      fetch(`${fake.url}/prompt`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt, client_id: client, prompt_id: "twice" }),
      });
    await post("first");
    await post("second");
    expect(fake.queue.pending).toEqual(["twice", "twice"]);
    const heard: string[] = [];
    const listen = (client: string) => {
      const ws = new WebSocket(`${fake.url.replace("http", "ws")}/ws?clientId=${client}`);
      ws.onmessage = (e) => {
        if (typeof e.data === "string" && JSON.parse(e.data).type === "execution_start") heard.push(client);
      };
      return new Promise<WebSocket>((r) => (ws.onopen = () => r(ws)));
    };
    const sockets = [await listen("first"), await listen("second")];
    fake.resume();
    await until(
      () => (fake.executions.get("twice") === 2 && fake.queue.pending.length + fake.queue.running.length === 0 ? true : undefined),
      "both copies run",
    );
    await until(() => (heard.length === 2 ? true : undefined), "both starts heard");
    expect(heard).toEqual(["first", "second"]);
    for (const ws of sockets) ws.close();
  });

  /** Stops `fake` and holds its port with a listener that drops every connection, until `reopen`. */
  async function outage(fake: FakeComfyUI) {
    const port = Number(new URL(fake.url).port);
    await fake.stop();
    fakes = fakes.filter((f) => f !== fake);
    let tries = 0;
    const refusing = net.createServer((socket) => {
      tries++;
      socket.destroy();
    });
    await new Promise<void>((r) => refusing.listen(port, "127.0.0.1", r));
    const close = () => new Promise((r) => refusing.close(r));
    return {
      tries: () => tries,
      close,
      reopen: async () => {
        await close();
        const again = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true }).start(port);
        fakes.push(again);
        return again;
      },
    };
  }

  it("a run that starts (or takes a job over) while ComfyUI restarts waits for it, then runs its prompt once", async () => {
    const { fake, engine } = await setup({ worker: true }, { unreachableGraceMs: 30_000 });
    const down = await outage(fake);
    const run = engine.execute(textGraph("restarting"), { ...recorder().options, runId: "restarting" });
    await until(() => (down.tries() > 0 ? true : undefined), "the run to find ComfyUI down");
    const back = await down.reopen();
    const result = await run;
    expect(result.outputs.map((o) => o.node_id)).toEqual(["2"]);
    expect(back.executions.get("restarting")).toBe(1);
  });

  it("a run that starts while no ComfyUI answers ends worker_lost after unreachableGraceMs, not as a failed workflow", async () => {
    const { fake, engine } = await setup({ worker: true });
    const down = await outage(fake);
    try {
      const error = await engine.execute(textGraph("never-back"), recorder().options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EngineError);
      expect((error as EngineError).jobError.code).toBe("worker_lost");
      expect(down.tries()).toBeGreaterThan(1);
    } finally {
      await down.close();
    }
  });
});
