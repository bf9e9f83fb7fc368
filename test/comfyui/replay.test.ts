// Recorded ComfyUI message sequences, replayed by a fake ComfyUI, against the comfyui backend's
// Engine interface: what each sequence must become (callbacks, outputs, errors, cancels).
import sharp from "sharp";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ComfyUIEngine } from "../../src/engine/comfyui/index.ts";
import type { ComfyUIEngineOptions } from "../../src/engine/comfyui/comfyui-engine.ts";
import { EmbeddedEngine, EngineValidationError } from "../../src/engine/embedded-engine.ts";
import { EngineError, ExecutionCancelledError } from "../../src/engine/errors.ts";
import { FakeComfyUI, previewFrame, textFrame } from "./fake-comfyui.ts";
import { FAST, recorder, until } from "./helpers.ts";
import { reasons } from "../node-errors.ts";

const OBJECT_INFO = new EmbeddedEngine().nodeDefinitionsSync() as unknown as Record<string, unknown>;
let jpeg: Buffer;
let png: Buffer;
let fakes: FakeComfyUI[] = [];
let engines: ComfyUIEngine[] = [];

beforeAll(async () => {
  jpeg = await sharp({ create: { width: 4, height: 4, channels: 3, background: "#00ff00" } })
    .jpeg()
    .toBuffer();
  png = await sharp({ create: { width: 4, height: 4, channels: 4, background: "#ff0000" } })
    .png()
    .toBuffer();
});

afterEach(async () => {
  for (const e of engines) await e.close();
  for (const f of fakes) await f.stop();
  engines = [];
  fakes = [];
});

async function setup(options: Partial<ConstructorParameters<typeof FakeComfyUI>[0]> = {}, engineOptions: Partial<ComfyUIEngineOptions> = {}) {
  const fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, ...options }).start();
  fakes.push(fake);
  const engine = new ComfyUIEngine({ ...FAST, ...engineOptions, urls: [fake.url] });
  engines.push(engine);
  return { fake, engine };
}

const SAMPLER_GRAPH = {
  "1": { class_type: "FlowgateSampler", inputs: { seed: 1, steps: 2, width: 16, height: 16 } },
  "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "a" } },
  "3": { class_type: "PrimitiveString", inputs: { value: "hello" } },
  "4": { class_type: "PreviewAny", inputs: { source: ["3", 0] } },
  "5": { class_type: "FlowgateTone", inputs: { seconds: 0.1, frequency: 440, sample_rate: 8000 } },
  "6": { class_type: "SaveAudio", inputs: { audio: ["5", 0], filename_prefix: "audio/a" } },
  "7": { class_type: "EmptyLatentImage", inputs: { width: 16, height: 16, batch_size: 1 } },
  "8": { class_type: "SaveLatent", inputs: { samples: ["7", 0], filename_prefix: "latents/a" } },
  "9": { class_type: "FlowgateSaveVideo", inputs: { images: ["1", 0], filename_prefix: "video/a", fps: 8, quality: 80 } },
  "10": { class_type: "FlowgateSaveFile", inputs: { text: "x,y", filename_prefix: "f", extension: "csv" } },
};

const DELAY_GRAPH = {
  "1": { class_type: "PrimitiveString", inputs: { value: "a" } },
  "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds: 30 } },
  "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
};

describe("comfyui backend: replayed message sequences", () => {
  it("maps cached nodes, steps, previews, text frames and every output kind; a success told whole on one connection needs no history read", async () => {
    const { fake, engine } = await setup();
    fake.files.set("output//a_00001_.png", { bytes: png, contentType: "image/png" });
    fake.files.set("output/audio/a_00001_.flac", { bytes: Buffer.from("fLaC\0\0\0\x22audio"), contentType: "audio/flac" });
    fake.files.set("output/latents/a_00001_.latent", { bytes: Buffer.from([1, 2, 3, 4]), contentType: "application/octet-stream" });
    fake.files.set("output/video/a_00001_.mp4", { bytes: Buffer.from("\0\0\0\x18ftypmp42video"), contentType: "video/mp4" });
    fake.files.set("output//f_00001_.csv", { bytes: Buffer.from("x,y"), contentType: "text/csv" });
    const rec = recorder();
    const result = engine.execute(SAMPLER_GRAPH, { ...rec.options, runId: "job-1", extra: { api_key_vendor_org: "partner-secret-1" } });
    const body = await fake.nextPrompt();
    const id = body.prompt_id;
    expect(id).toBe("job-1");
    expect(body.extra_data).toEqual({ api_key_vendor_org: "partner-secret-1" });
    expect(fake.handshakes).toEqual([{ type: "feature_flags", data: { supports_preview_metadata: true } }]);
    const p = (data: Record<string, unknown>) => ({ ...data, prompt_id: id });
    fake.startRunning(id);
    fake.send("execution_start", p({}));
    fake.send("execution_cached", p({ nodes: ["3", "4"] }));
    // Binary frames name no prompt to buffer them by: send them once the run follows its prompt.
    await until(() => rec.events.find((e) => e[0] === "cached"), "the cached nodes");
    fake.send("executed", p({ node: "4", display_node: "4", output: { text: ["hello"] } }));
    fake.send("executing", p({ node: "1", display_node: "1" }));
    fake.send("progress", p({ node: "1", value: 1, max: 2 }));
    fake.sendBinary(
      previewFrame({ node_id: "1", display_node_id: "1", real_node_id: "1", prompt_id: id, parent_node_id: null, image_type: "image/jpeg" }, jpeg),
    );
    fake.send("progress", p({ node: "1", value: 2, max: 2 }));
    fake.sendBinary(textFrame("1", "sampling done\n"));
    fake.send("executing", p({ node: "2", display_node: "2" }));
    fake.send("executed", p({ node: "2", display_node: "2", output: { images: [{ filename: "a_00001_.png", subfolder: "", type: "output" }] } }));
    fake.send("executing", p({ node: "6", display_node: "6" }));
    fake.send("executed", p({ node: "6", output: { audio: [{ filename: "a_00001_.flac", subfolder: "audio", type: "output" }] } }));
    fake.send("executing", p({ node: "8", display_node: "8" }));
    fake.send("executed", p({ node: "8", output: { latents: [{ filename: "a_00001_.latent", subfolder: "latents", type: "output" }] } }));
    fake.send("executing", p({ node: "9", display_node: "9" }));
    fake.send("executed", p({ node: "9", output: { gifs: [{ filename: "a_00001_.mp4", subfolder: "video", type: "output", format: "video/h264-mp4" }] } }));
    fake.send("executing", p({ node: "10", display_node: "10" }));
    fake.send("executed", p({ node: "10", output: { files: [{ filename: "f_00001_.csv", subfolder: "", type: "output" }] } }));
    fake.send("execution_success", p({}));
    const done = await result;
    // Every output node (the cached one too) sent `executed` on the socket the run listened to since
    // its POST: no history read after it (the one before it asked whether ComfyUI held the prompt already).
    const post = fake.requests.findIndex((r) => r.method === "POST" && r.path === "/prompt");
    expect(fake.requests.slice(post).filter((r) => r.method === "GET" && r.path === `/history/${id}`)).toHaveLength(0);
    expect(fake.requests.slice(0, post).filter((r) => r.method === "GET" && r.path === `/history/${id}`)).toHaveLength(1);

    expect(rec.events[0]![0]).toBe("start");
    expect(rec.events[0]![2]).toEqual({ "1": 2 });
    expect((rec.events[0]![1] as string[]).sort()).toEqual(["1", "10", "2", "3", "4", "5", "6", "7", "8", "9"]);
    expect(rec.events.find((e) => e[0] === "cached")).toEqual(["cached", ["3", "4"]]);
    expect(rec.events.filter((e) => e[0] === "progress")).toEqual([
      ["progress", "1", 1, 2],
      ["progress", "1", 2, 2],
    ]);
    const preview = rec.events.find((e) => e[0] === "preview")!;
    expect(preview.slice(0, 3)).toEqual(["preview", "1", "image/jpeg"]);
    expect(Buffer.compare(preview[3] as Buffer, jpeg)).toBe(0);
    expect(rec.events).toContainEqual(["log", "sampling done\n", "1"]);
    // A cached output node is reported done as cached; node 1 (no ui) is done when node 2 starts.
    expect(rec.events).toContainEqual(["node_done", "4", true]);
    expect(rec.events.findIndex((e) => e[0] === "node_done" && e[1] === "1")).toBeLessThan(rec.events.findIndex((e) => e[0] === "node_start" && e[1] === "2"));
    const kinds = Object.fromEntries(rec.outputs.map((o) => [o.node_id, [o.type, o.content_type, o.folder, o.name]]));
    expect(kinds).toEqual({
      "2": ["image", "image/png", "output", "a_00001_.png"],
      "4": ["text", "text/plain; charset=utf-8", "temp", "PreviewAny_4_00001_.txt"],
      "6": ["audio", "audio/flac", "output", "a_00001_.flac"],
      "8": ["latent", "application/octet-stream", "output", "a_00001_.latent"],
      "9": ["video", "video/mp4", "output", "a_00001_.mp4"],
      "10": ["file", "text/csv", "output", "f_00001_.csv"],
    });
    expect(rec.outputs.find((o) => o.node_id === "4")!.data.toString()).toBe("hello");
    expect(Buffer.compare(rec.outputs.find((o) => o.node_id === "2")!.data, png)).toBe(0);
    expect(done.outputs.map((o) => o.node_id).sort()).toEqual(["10", "2", "4", "6", "8", "9"]);
    expect(done.cached).toEqual(["3", "4"]);
  });

  it("messages that beat POST /prompt's answer are not lost", async () => {
    let fake!: FakeComfyUI;
    ({ fake } = await setup({
      beforeAnswer: (id) => {
        fake.files.set("output//early_00001_.png", { bytes: png, contentType: "image/png" });
        fake.send("execution_start", { prompt_id: id });
        fake.send("executed", { node: "2", output: { images: [{ filename: "early_00001_.png", subfolder: "", type: "output" }] }, prompt_id: id });
        // History without outputs: they can only come from the early `executed` message.
        fake.finish(id, { outputs: {}, status: { status_str: "success", completed: true, messages: [] } });
        fake.send("execution_success", { prompt_id: id });
      },
    }));
    const engine = engines[0]!;
    const rec = recorder();
    const done = await engine.execute(
      {
        "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
        "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "early" } },
      },
      rec.options,
    );
    expect(done.outputs.map((o) => o.name)).toEqual(["early_00001_.png"]);
  });

  it("a missed final message: the reconcile finds the history entry, and outputs only history lists are still delivered", async () => {
    const { fake, engine } = await setup();
    fake.files.set("output//late_00001_.png", { bytes: png, contentType: "image/png" });
    const rec = recorder();
    const result = engine.execute(
      {
        "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
        "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "late" } },
      },
      rec.options,
    );
    const { prompt_id: id } = await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id });
    fake.send("executing", { node: "2", prompt_id: id });
    // The socket drops `executed`, `execution_success` and the final `executing`: only history knows.
    fake.finish(id, {
      outputs: { "2": { images: [{ filename: "late_00001_.png", subfolder: "", type: "output" }] } },
      status: { status_str: "success", completed: true, messages: [] },
    });
    const done = await result;
    expect(done.outputs.map((o) => [o.node_id, o.name, o.type])).toEqual([["2", "late_00001_.png", "image"]]);
    expect(fake.calls("GET", "/view")).toHaveLength(1);
    expect(rec.events).toContainEqual(["node_done", "2", false]);
  });

  it("with the instance's output folder, output files are read from it; /view serves what is not there, not an output, or outside it", async () => {
    const root = await mkdtemp(join(tmpdir(), "flowgate-comfy-out-"));
    try {
      const outputDir = join(root, "output");
      await mkdir(join(outputDir, "sub"), { recursive: true });
      // The same names hold other bytes on disk than over /view, so each output shows its source.
      await writeFile(join(outputDir, "sub", "local_00001_.png"), png);
      await writeFile(join(root, "escape.png"), png);
      const { fake, engine } = await setup({}, { outputDirs: [outputDir] });
      const files = [
        { filename: "local_00001_.png", subfolder: "sub", type: "output" },
        { filename: "missing_00001_.png", subfolder: "", type: "output" },
        { filename: "escape.png", subfolder: "..", type: "output" },
        { filename: "preview_00001_.png", subfolder: "", type: "temp" },
      ];
      for (const f of files.slice(1)) fake.files.set(`${f.type}/${f.subfolder}/${f.filename}`, { bytes: jpeg, contentType: "image/jpeg" });
      const rec = recorder();
      const result = engine.execute(
        {
          "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
          "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "local" } },
        },
        rec.options,
      );
      const { prompt_id: id } = await fake.nextPrompt();
      fake.startRunning(id);
      fake.send("execution_start", { prompt_id: id });
      fake.send("executing", { node: "2", prompt_id: id });
      fake.send("executed", { node: "2", output: { images: files }, prompt_id: id });
      fake.finish(id, { outputs: { "2": { images: files } }, status: { status_str: "success", completed: true, messages: [] } });
      fake.send("execution_success", { prompt_id: id });
      await result;
      const bytesOf = (name: string) => rec.outputs.find((o) => o.name === name)!;
      expect(Buffer.compare(bytesOf("local_00001_.png").data, png)).toBe(0);
      expect(bytesOf("local_00001_.png").content_type).toBe("image/png");
      for (const f of files.slice(1)) expect(Buffer.compare(bytesOf(f.filename).data, jpeg), f.filename).toBe(0);
      expect(
        fake
          .calls("GET", "/view")
          .map((c) => c.query.get("filename"))
          .sort(),
      ).toEqual(["escape.png", "missing_00001_.png", "preview_00001_.png"]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("a preview frame without metadata goes to the prompt executing now, re-encoded as JPEG", async () => {
    const { fake, engine } = await setup();
    const rec = recorder();
    const result = engine.execute(DELAY_GRAPH, rec.options);
    const { prompt_id: id } = await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id });
    fake.send("executing", { node: "2", prompt_id: id });
    // Frames carry no prompt id: they reach a run that follows its prompt (POST /prompt answered).
    await until(() => rec.events.find((e) => e[0] === "node_start"), "the node start");
    fake.sendBinary(Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 2]), png]));
    const preview = await until(() => rec.events.find((e) => e[0] === "preview"), "a preview");
    expect(preview.slice(0, 3)).toEqual(["preview", "2", "image/jpeg"]);
    expect((preview[3] as Buffer).subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    fake.finish(id, { outputs: {}, status: { status_str: "success", completed: true, messages: [] } });
    fake.send("execution_success", { prompt_id: id });
    await result;
  });

  it("an execution error becomes the job error: code from exception_type, paths and the partner key removed", async () => {
    const { fake, engine } = await setup();
    const key = "partner-secret-xyz";
    const result = engine.execute(SAMPLER_GRAPH, { ...recorder().options, extra: { api_key_vendor_org: key } });
    const { prompt_id: id } = await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id });
    fake.send("executing", { node: "1", prompt_id: id });
    fake.send("execution_error", {
      prompt_id: id,
      node_id: "1",
      node_type: "FlowgateSampler",
      executed: [],
      exception_type: "torch.OutOfMemoryError",
      exception_message: `Allocation failed in /home/user/ComfyUI/comfy/sample.py with key ${key}`,
      traceback: ['  File "/home/user/ComfyUI/execution.py", line 10, in run\n', `    call(key="${key}")\n`],
      current_inputs: {},
      current_outputs: [],
    });
    fake.finish(id, { outputs: {}, status: { status_str: "error", completed: false, messages: [["execution_error", { prompt_id: id, node_id: "1" }]] } });
    const err = await result.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EngineError);
    const je = (err as EngineError).jobError;
    expect(je.code).toBe("out_of_memory");
    expect(je.node_id).toBe("1");
    expect(je.class_type).toBe("FlowgateSampler");
    expect(je.message).toContain("sample.py");
    expect(JSON.stringify(je)).not.toContain("/home/user");
    expect(JSON.stringify(je)).not.toContain(key);
    expect(je.traceback).toContain("execution.py");
  });

  it("cancel of a running prompt interrupts it by its prompt id, never globally", async () => {
    const { fake, engine } = await setup();
    const controller = new AbortController();
    const result = engine.execute(DELAY_GRAPH, { ...recorder().options, signal: controller.signal });
    const { prompt_id: id } = await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id });
    fake.send("executing", { node: "2", prompt_id: id });
    controller.abort();
    await until(() => (fake.calls("POST", "/interrupt").length > 0 ? true : undefined), "an interrupt");
    expect(fake.calls("POST", "/interrupt").map((c) => c.json)).toEqual([{ prompt_id: id }]);
    expect(fake.calls("POST", "/queue")).toHaveLength(0);
    fake.send("execution_interrupted", { prompt_id: id, node_id: "2", node_type: "FlowgateDelay", executed: [] });
    fake.finish(id, { outputs: {}, status: { status_str: "error", completed: false, messages: [["execution_interrupted", { prompt_id: id }]] } });
    const err = await result.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ExecutionCancelledError);
  });

  it("a stop that finds the prompt already finished in ComfyUI (its end not read yet) ends as ComfyUI recorded, outputs included", async () => {
    // Reconciled rarely: the end is in ComfyUI's history and not read yet when the stop comes.
    const { fake, engine } = await setup({}, { pollIntervalMs: 60_000 });
    const controller = new AbortController();
    const rec = recorder();
    const result = engine.execute(DELAY_GRAPH, { ...rec.options, signal: controller.signal });
    const { prompt_id: id } = await fake.nextPrompt();
    // It ran and finished with no message reaching this client (as for a prompt another process queued).
    fake.startRunning(id);
    fake.finish(id, {
      outputs: { "3": { text: ["done"] } },
      status: {
        status_str: "success",
        completed: true,
        messages: [
          ["execution_start", { prompt_id: id, timestamp: 1 }],
          ["execution_success", { prompt_id: id, timestamp: 2 }],
        ],
      },
    });
    controller.abort();
    const done = await result;
    expect(done.outputs.map((o) => o.node_id)).toEqual(["3"]);
    expect(fake.calls("POST", "/interrupt")).toHaveLength(0);
  });

  it("cancel of a prompt still pending in ComfyUI's queue deletes it from the queue", async () => {
    const { fake, engine } = await setup();
    const controller = new AbortController();
    const result = engine.execute(DELAY_GRAPH, { ...recorder().options, signal: controller.signal });
    const { prompt_id: id } = await fake.nextPrompt();
    expect(fake.queue.pending).toContain(id);
    controller.abort();
    const err = await result.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ExecutionCancelledError);
    expect(fake.calls("POST", "/queue").map((c) => c.json)).toEqual([{ delete: [id] }]);
    expect(fake.calls("POST", "/interrupt")).toHaveLength(0);
    expect(fake.queue.pending).not.toContain(id);
  });

  it("an interrupt nobody here asked for fails the run (it was not canceled through flowgate)", async () => {
    const { fake, engine } = await setup();
    const result = engine.execute(DELAY_GRAPH, recorder().options);
    const { prompt_id: id } = await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id });
    fake.send("execution_interrupted", { prompt_id: id, node_id: "2", node_type: "FlowgateDelay", executed: [] });
    fake.finish(id, { outputs: {}, status: { status_str: "error", completed: false, messages: [["execution_interrupted", { prompt_id: id }]] } });
    const err = await result.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).jobError.code).toBe("node_execution_error");
  });

  it("a dropped socket reconnects under the same client id; what it missed comes from history", async () => {
    const { fake, engine } = await setup();
    fake.files.set("output//gap_00001_.png", { bytes: png, contentType: "image/png" });
    const rec = recorder();
    const result = engine.execute(
      {
        "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
        "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "gap" } },
      },
      rec.options,
    );
    const { prompt_id: id, client_id } = await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id });
    fake.dropSockets();
    // While nobody listens the node runs and saves its file; the prompt is still running.
    fake.send("executed", { node: "2", output: { images: [{ filename: "gap_00001_.png", subfolder: "", type: "output" }] }, prompt_id: id });
    await until(() => (fake.connections.length === 2 && fake.socketCount === 1 && fake.handshakes.length === 2 ? true : undefined), "the reconnect");
    expect(new Set(fake.connections.map((u) => new URL(u, "http://x").searchParams.get("clientId")))).toEqual(new Set([client_id]));
    fake.finish(id, {
      outputs: { "2": { images: [{ filename: "gap_00001_.png", subfolder: "", type: "output" }] } },
      status: { status_str: "success", completed: true, messages: [] },
    });
    fake.send("execution_success", { prompt_id: id });
    const done = await result;
    expect(done.outputs.map((o) => o.name)).toEqual(["gap_00001_.png"]);
  });

  it("a prompt ComfyUI forgot (restart: neither queued nor in history) ends with worker_lost", async () => {
    const { fake, engine } = await setup();
    const result = engine.execute(DELAY_GRAPH, recorder().options);
    const { prompt_id: id } = await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id });
    fake.dropSockets();
    fake.forget(id);
    const err = await result.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).jobError.code).toBe("worker_lost");
  });

  it("ComfyUI's 400 on POST /prompt becomes the same node_errors shape as submission-time validation", async () => {
    const comfy400 = {
      error: { type: "prompt_outputs_failed_validation", message: "Prompt outputs failed validation", details: "", extra_info: {} },
      node_errors: {
        "1": {
          errors: [
            {
              type: "value_not_in_list",
              message: "Value not in list",
              details: "ckpt_name: 'x.safetensors' not in []",
              extra_info: { input_name: "ckpt_name", input_config: null, received_value: "x.safetensors" },
            },
          ],
          dependent_outputs: ["2"],
          class_type: "EmptyImage",
        },
        "2": {
          errors: [{ type: "required_input_missing", message: "Required input is missing", details: "images", extra_info: { input_name: "images" } }],
          dependent_outputs: ["2"],
          class_type: "SaveImage",
        },
      },
    };
    const { engine } = await setup({ onPrompt: () => ({ status: 400, body: comfy400 }) });
    const err = await engine
      .execute(
        {
          "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
          "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "x" } },
        },
        recorder().options,
      )
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(EngineValidationError);
    const v = (err as EngineValidationError).validation;
    expect(reasons(v.node_errors)).toEqual({ "1": [{ field: "ckpt_name", reason: "not_in_options" }], "2": [{ field: "images", reason: "missing_input" }] });
    expect(v.comfy?.error.type).toBe("prompt_outputs_failed_validation");
    expect((err as EngineValidationError).jobError).toEqual({
      code: "invalid_input",
      message: "ComfyUI refused the prompt: Value not in list: ckpt_name: 'x.safetensors' not in []",
      node_id: "1",
      class_type: "EmptyImage",
      traceback: null,
    });
  });

  it("a node's own check ComfyUI failed (LoadImage of a missing file) reaches the job error with its reason, node, class and input", async () => {
    const comfy400 = {
      error: { type: "prompt_outputs_failed_validation", message: "Prompt outputs failed validation", details: "", extra_info: {} },
      node_errors: {
        "1": {
          errors: [
            {
              type: "custom_validation_failed",
              message: "Custom validation failed for node",
              details: "LoadImage - Invalid image file: does-not-exist.png",
              extra_info: { input_name: "image" },
            },
          ],
          dependent_outputs: ["2"],
          class_type: "LoadImage",
        },
      },
    };
    const { engine } = await setup({ onPrompt: () => ({ status: 400, body: comfy400 }) });
    const err = await engine
      .execute(
        {
          "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
          "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "x" } },
        },
        recorder().options,
      )
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect((err as EngineValidationError).validation.node_errors).toEqual({
      "1": [{ field: "image", reason: "bad_node", message: "Invalid image file: does-not-exist.png" }],
    });
    expect((err as EngineValidationError).jobError).toEqual({
      code: "invalid_input",
      message: "ComfyUI refused the prompt: Invalid image file: does-not-exist.png (input image)",
      node_id: "1",
      class_type: "LoadImage",
      traceback: null,
    });
  });

  it("core/ASSET inputs are uploaded once per blob and replaced by the uploaded name", async () => {
    const { fake, engine } = await setup();
    const hash = `blake3:${"ab".repeat(32)}`;
    let resolved = 0;
    const ref = { __type: "core/ASSET", info: { id: "0190a0e0-0000-7000-8000-000000000001" } };
    const graph = {
      "1": { class_type: "LoadImage", inputs: { image: ref } },
      "2": { class_type: "LoadImage", inputs: { image: ref } },
      "3": { class_type: "ImageBlend", inputs: { image1: ["1", 0], image2: ["2", 0], blend_factor: 0.5, blend_mode: "normal" } },
      "4": { class_type: "PreviewImage", inputs: { images: ["3", 0] } },
    };
    const options = {
      ...recorder().options,
      resolveAsset: async () => {
        resolved++;
        return { bytes: png, hash, content_type: "image/png" };
      },
    };
    for (let i = 0; i < 2; i++) {
      const result = engine.execute(graph, options);
      const { prompt_id: id, prompt } = await fake.nextPrompt();
      expect(prompt["1"].inputs.image).toBe(`flowgate-${"ab".repeat(16)}.png`);
      expect(prompt["2"].inputs.image).toBe(prompt["1"].inputs.image);
      fake.finish(id, { outputs: {}, status: { status_str: "success", completed: true, messages: [] } });
      fake.send("execution_success", { prompt_id: id });
      await result;
    }
    expect(resolved).toBe(4);
    expect(fake.calls("POST", "/upload/image")).toHaveLength(1);
  });
});
