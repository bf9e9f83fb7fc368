// Memory pressure through the real server: oversized graphs are 422 at submission (and 400 in
// ComfyUI's shape on /api/prompt), a job past its budget at run time ends failed out_of_memory,
// and /healthz answers while a heavy node runs.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import type { Engine } from "../../src/engine/engine.ts";
import { engineAdapter } from "../../src/jobs/engine-adapter.ts";
import { startServer } from "../../src/server/start.ts";
import { createEngine } from "../../src/cli/create-engine.ts";
import { Api, expectError, upload, v } from "./helpers.ts";
import { pngOf } from "../engine/helpers.ts";

function saveGraph(width: number, height: number, batch = 1) {
  return {
    "1": { class_type: "EmptyImage", inputs: { width, height, batch_size: batch, color: 0 } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "big" } },
  };
}

describe("memory budget through the server", () => {
  let server: { url: string; api: Api; stop(): Promise<void> };
  beforeAll(async () => {
    // The engine as `flowgate serve` builds it from its flags.
    const dataDir = await mkdtemp(join(tmpdir(), "flowgate-memory-"));
    const config = loadConfig(["--port", "0", "--data-dir", dataDir, "--job-memory", "2MB"], {});
    const running = await startServer(config, engineAdapter(createEngine(config)), { quiet: true });
    server = {
      url: running.url,
      api: new Api(running.url),
      async stop() {
        await running.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  });
  afterAll(() => server.stop());

  it("refuses a graph past --job-memory at submission: 422 invalid_workflow with the node's reason", async () => {
    const res = await server.api.post("/api/v2/jobs", { workflow: saveGraph(512, 512, 2) });
    expectError(res, 422, "invalid_workflow");
    expect(res.body.error.details.node_errors).toEqual({
      "1": [{ field: "", reason: "out_of_range", message: expect.stringMatching(/memory budget of 2\.0 MiB/) }],
    });
  });

  it("answers /api/prompt with ComfyUI's 400 for the same graph", async () => {
    const res = await fetch(`${server.url}/api/prompt`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: saveGraph(512, 512, 2) }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as Record<string, any>;
    expect(v.schema_HostedError(body)).toBe(true);
    expect(body.node_errors["1"].errors[0]).toMatchObject({ type: "custom_validation_failed", details: expect.stringMatching(/memory budget/) });
  });

  it("fails a job whose size shows only at run time with out_of_memory", async () => {
    const png = await pngOf(512, 512, 3, new Array(512 * 512 * 3).fill(200));
    const up = await upload(server.api, [{ name: "file", file: png, filename: "big.png", type: "image/png" }]);
    expect(up.status, up.text).toBe(201);
    const job = await server.api.submit({
      "1": { class_type: "LoadImage", inputs: { image: { __type: "core/ASSET", info: { id: up.body.id } } } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "x" } },
    });
    const done = await server.api.waitTerminal(job.id);
    expect(done.status).toBe("failed");
    expect(done.error).toMatchObject({ code: "out_of_memory", node_id: "1", class_type: "LoadImage" });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});

describe("/healthz while a heavy node runs", () => {
  it("answers before the node is done (the node yields to the event loop)", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "flowgate-memory-"));
    // Every checkpoint yields (yieldEveryMs 0): the outcome depends on turns of the loop, not on speed.
    const inner = new EmbeddedEngine({ yieldEveryMs: 0 });
    let url = "";
    let nodeDone = false;
    let answered: Promise<{ status: number; beforeDone: boolean }> | null = null;
    const engine: Engine = {
      kind: inner.kind,
      nodeDefinitions: () => inner.nodeDefinitions(),
      validate: (graph) => inner.validate(graph),
      execute: (graph, options = {}) =>
        inner.execute(graph, {
          ...options,
          async onNodeStart(e) {
            await options.onNodeStart?.(e);
            if (e.node_id !== "1") return;
            answered = fetch(`${url}/healthz`).then(async (res) => {
              await res.arrayBuffer();
              return { status: res.status, beforeDone: !nodeDone };
            });
          },
          async onNodeDone(e) {
            if (e.node_id === "1") nodeDone = true;
            await options.onNodeDone?.(e);
          },
        }),
    };
    const server = await startServer(loadConfig(["--port", "0", "--data-dir", dataDir], {}), engineAdapter(engine), { quiet: true });
    url = server.url;
    try {
      const res = await fetch(`${url}/api/v2/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ workflow: saveGraph(1024, 1024, 2) }),
      });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      const deadline = Date.now() + 30_000;
      let status = "";
      while (!["succeeded", "failed", "canceled"].includes(status) && Date.now() < deadline) {
        status = ((await (await fetch(`${url}/api/v2/jobs/${id}`)).json()) as { status: string }).status;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(status).toBe("succeeded");
      expect(answered).not.toBeNull();
      expect(await answered).toEqual({ status: 200, beforeDone: true });
    } finally {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
