// The hosted interface over real HTTP and a real WebSocket, driven by a ComfyUI-style client.
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { decodeFrame } from "../../src/wire/binary-frames.ts";
import { ComfyClient } from "./comfy-client.ts";
import { startTestServer, until, type TestServer } from "./hosted-server.ts";

const KEY = "test-key-0123456789";
let server: TestServer;
let client: ComfyClient;

async function png(color: { r: number; g: number; b: number }, alpha = 1, size = 8): Promise<Buffer> {
  return sharp({ create: { width: size, height: size, channels: 4, background: { ...color, alpha } } })
    .png()
    .toBuffer();
}

beforeAll(async () => {
  server = await startTestServer(["--token", KEY, "--concurrency", "1"]);
  client = new ComfyClient(server.url, KEY);
  await client.connect(true);
});
afterAll(async () => {
  client.close();
  await server.stop();
});

describe("a ComfyUI client, unchanged", () => {
  it("HOST-2/4/5/6, WS-2/3/5/6: upload, queue, follow the socket, read history and download every output", async () => {
    const upload = await client.uploadImage(await png({ r: 255, g: 0, b: 0 }), "red.png");
    expect(v.schema_HostedUploadResult(upload)).toBe(true);
    const prompt = {
      "1": { class_type: "LoadImage", inputs: { image: upload.name } },
      "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "compat" } },
      "4": { class_type: "FlowgateSampler", inputs: { seed: 7, steps: 3, width: 16, height: 16 } },
      "5": { class_type: "PreviewImage", inputs: { images: ["4", 0] } },
    };
    const res = await client.queuePrompt(prompt);
    expect(res.status).toBe(200);
    const { prompt_id } = (await res.json()) as { prompt_id: string };
    const mine = await client.waitForEnd(prompt_id);
    const types = mine.map((m) => m.type);
    expect(types[0]).toBe("execution_start");
    expect(types).toContain("execution_cached");
    expect(types).toContain("progress");
    expect(types.indexOf("execution_success")).toBeGreaterThan(types.lastIndexOf("executed"));
    for (const m of mine) {
      const validate = (v as Record<string, any>)[`event_ws_${m.type}`];
      expect(validate, `no validator for ${m.type}`).toBeTypeOf("function");
      expect(validate(m), `${m.type}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    // Previews came as type-4 frames (the client sent feature_flags) with this prompt's metadata.
    const previews = client.binary.map((b) => decodeFrame(b)).filter((f) => f.type === 4);
    expect(previews.length).toBeGreaterThan(0);
    const first = previews[0] as Extract<ReturnType<typeof decodeFrame>, { type: 4 }>;
    expect(first.metadata.prompt_id).toBe(prompt_id);
    expect(first.image.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));

    const history = await client.history(prompt_id);
    expect(v.schema_HostedHistory(history), JSON.stringify(v.schema_HostedHistory.errors)).toBe(true);
    const entry = history[prompt_id];
    expect(entry.status.completed).toBe(true);
    const files = Object.values(entry.outputs as Record<string, { images?: any[] }>).flatMap((o) => o.images ?? []);
    expect(files.length).toBe(2);
    for (const file of files) {
      const got = await client.view(file);
      expect(got.status).toBe(200);
      expect(got.contentType).toBe("image/png");
      expect(got.target).not.toContain(KEY);
      const meta = await sharp(got.bytes).metadata();
      expect(meta.format).toBe("png");
    }
    // The inverted red image is cyan.
    const saved = files.find((f) => f.type === "output")!;
    const { data } = await sharp((await client.view(saved)).bytes)
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect([data[0], data[1], data[2]]).toEqual([0, 255, 255]);

    const status = await (await fetch(`${server.url}/api/job/${prompt_id}/status`, { headers: { "X-API-Key": KEY } })).json();
    expect(status).toEqual({ status: "success" });
  });

  it("WS-6: file names never repeat across jobs, so /api/view serves each job's own file", async () => {
    const run = async (color: number) => {
      const graph = {
        "1": { class_type: "EmptyImage", inputs: { width: 4, height: 4, batch_size: 1, color } },
        "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "same/prefix" } },
      };
      const id = ((await (await client.queuePrompt(graph)).json()) as { prompt_id: string }).prompt_id;
      const executed = (await client.waitForEnd(id)).find((m) => m.type === "executed")!;
      return (executed.data.output as { images: Array<{ filename: string; subfolder: string; type: string }> }).images[0]!;
    };
    const red = await run(0xff0000);
    const blue = await run(0x0000ff);
    expect(red.filename).not.toBe(blue.filename);
    const pixel = async (f: typeof red) => [
      ...(
        await sharp((await client.view(f)).bytes)
          .raw()
          .toBuffer()
      ).subarray(0, 3),
    ];
    expect(await pixel(red)).toEqual([255, 0, 0]);
    expect(await pixel(blue)).toEqual([0, 0, 255]);
  });

  it("HOST-2/HOST-10: the same bytes keep the same name; subfolder is ignored", async () => {
    const bytes = await png({ r: 1, g: 2, b: 3 });
    const a = await client.uploadImage(bytes, "a.png");
    const b = await client.uploadImage(bytes, "b.png");
    expect(a.name).toBe(b.name);
    expect(a.subfolder).toBe("");
  });

  it("HOST-3: a mask upload applies the mask's alpha to the original", async () => {
    const original = await client.uploadImage(await png({ r: 10, g: 20, b: 30 }), "orig.png");
    const form = new FormData();
    form.append("image", new Blob([new Uint8Array(await png({ r: 0, g: 0, b: 0 }, 0.5))]), "mask.png");
    form.append("type", "input");
    form.append("subfolder", "clipspace");
    form.append("original_ref", JSON.stringify({ filename: original.name, subfolder: "", type: "input" }));
    const res = await fetch(`${server.url}/api/upload/mask`, { method: "POST", headers: { "X-API-Key": KEY }, body: form });
    expect(res.status).toBe(200);
    const result = (await res.json()) as { name: string; subfolder: string };
    const got = await client.view({ filename: result.name, subfolder: "", type: "input" });
    const { data, info } = await sharp(got.bytes).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(4);
    expect([data[0], data[1], data[2]]).toEqual([10, 20, 30]);
    expect(data[3]).toBeGreaterThan(120);
    expect(data[3]).toBeLessThan(135);
  });

  it("HOST-4/HOST-9: a bad graph is 400 in ComfyUI's shape", async () => {
    const res = await client.queuePrompt({ "1": { class_type: "SaveImage", inputs: { filename_prefix: "x" } } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as Record<string, any>;
    expect(v.schema_HostedError(body)).toBe(true);
    expect(body.error.type).toBe("prompt_outputs_failed_validation");
    expect(body.node_errors["1"].errors[0].type).toBe("required_input_missing");
  });

  it("HOST-9/AUTH-5: a missing or wrong key is 401 on REST and on the socket", async () => {
    expect((await fetch(`${server.url}/api/queue`)).status).toBe(401);
    expect((await fetch(`${server.url}/api/queue`, { headers: { "X-API-Key": "nope" } })).status).toBe(401);
    const bad = new ComfyClient(server.url, "nope");
    await expect(bad.connect()).rejects.toThrow(/401/);
  });

  it("HOST-6: traversal attempts are refused and never reach the disk", async () => {
    for (const q of ["filename=../../etc/passwd", "filename=/etc/passwd", "filename=x.png&subfolder=../..", "filename=..%5C..%5Cwin.ini", "filename=a%00b"]) {
      const res = await fetch(`${server.url}/api/view?${q}&type=output`, { headers: { "X-API-Key": KEY }, redirect: "manual" });
      expect([400, 403], q).toContain(res.status);
    }
    expect((await fetch(`${server.url}/api/view?filename=nothing.png&type=output`, { headers: { "X-API-Key": KEY }, redirect: "manual" })).status).toBe(404);
  });

  it("HOST-7/HOST-8: queue lists and deletes pending jobs; interrupt stops the running one", async () => {
    const slow = {
      "1": { class_type: "PrimitiveString", inputs: { value: "x" } },
      "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds: 30 } },
      "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
    };
    const running = ((await (await client.queuePrompt(slow)).json()) as { prompt_id: string }).prompt_id;
    const pending = (
      (await (await client.queuePrompt({ ...slow, "1": { class_type: "PrimitiveString", inputs: { value: "y" } } })).json()) as { prompt_id: string }
    ).prompt_id;
    const queue = await until(async () => {
      const q = (await (await fetch(`${server.url}/api/queue`, { headers: { "X-API-Key": KEY } })).json()) as {
        queue_running: any[][];
        queue_pending: any[][];
      };
      return q.queue_running.length === 1 ? q : undefined;
    });
    expect(v.schema_HostedQueue(queue)).toBe(true);
    expect(queue.queue_running[0]?.[1]).toBe(running);
    expect(queue.queue_pending.map((e: any[]) => e[1])).toContain(pending);
    expect(queue.queue_pending[0]?.[3]).toEqual({ create_time: expect.any(Number) });

    await fetch(`${server.url}/api/queue`, {
      method: "POST",
      headers: { "X-API-Key": KEY, "content-type": "application/json" },
      body: JSON.stringify({ delete: [pending] }),
    });
    expect(await (await fetch(`${server.url}/api/job/${pending}/status`, { headers: { "X-API-Key": KEY } })).json()).toEqual({ status: "cancelled" });

    await fetch(`${server.url}/api/interrupt`, { method: "POST", headers: { "X-API-Key": KEY, "content-type": "application/json" }, body: "{}" });
    const end = await client.waitForEnd(running);
    expect(end.map((m) => m.type)).toContain("execution_interrupted");
    await until(async () => {
      const s = (await (await fetch(`${server.url}/api/job/${running}/status`, { headers: { "X-API-Key": KEY } })).json()) as { status: string };
      return s.status === "cancelled" ? s : undefined;
    });
  });

  it("WS-1: every connection of a caller gets the same messages, and a reconnect mid-job still sees the end", async () => {
    const other = new ComfyClient(server.url, KEY);
    await other.connect();
    const slow = {
      "1": { class_type: "PrimitiveString", inputs: { value: "z" } },
      "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds: 0.5 } },
      "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
    };
    const id = ((await (await client.queuePrompt(slow)).json()) as { prompt_id: string }).prompt_id;
    await until(async () => (other.messages.some((m) => m.type === "execution_start" && m.data.prompt_id === id) ? true : undefined));
    other.close();
    const again = new ComfyClient(server.url, KEY);
    await again.connect();
    const seenByAgain = await again.waitForEnd(id);
    expect(seenByAgain.map((m) => m.type)).toContain("execution_success");
    const seenByFirst = await client.waitForEnd(id);
    expect(seenByFirst.map((m) => m.type)).toContain("execution_success");
    again.close();
  });

  it("HOST-1: object_info has every node with input.required", async () => {
    const info = (await (await fetch(`${server.url}/api/object_info`, { headers: { "X-API-Key": KEY } })).json()) as Record<string, any>;
    expect(v.schema_HostedNodeDefinitions(info)).toBe(true);
    for (const name of ["LoadImage", "SaveImage", "PreviewImage", "EmptyImage", "FlowgateSampler"]) expect(info[name]?.input?.required).toBeTypeOf("object");
    const one = await (await fetch(`${server.url}/api/object_info/SaveImage`, { headers: { "X-API-Key": KEY } })).json();
    expect(Object.keys(one as object)).toEqual(["SaveImage"]);
    // ComfyUI's bare routes answer too.
    const bare = (await (await fetch(`${server.url}/object_info/SaveImage`, { headers: { "X-API-Key": KEY } })).json()) as object;
    expect(bare).toEqual(one);
    expect((await fetch(`${server.url}/queue`, { headers: { "X-API-Key": KEY } })).status).toBe(200);
    expect((await fetch(`${server.url}/queue`)).status).toBe(401);
  });
});
