// The hosted client against the real server: upload, queue, poll the status until a terminal
// value, the WebSocket (feature_flags handshake, JSON and binary frames, previews with metadata),
// and /api/view downloads whose redirect target never sees the key.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOSTED_TERMINAL_STATUSES, HostedApiError, HostedClient, isHostedTerminal, type HostedFileInfo, type HostedSocketEvent } from "../../src/index.ts";
import { delayGraph, recordingSleep, startTestServer, unique, type TestServer } from "./fixtures.ts";
import { startRecordingForwarder, startRedirectingProxy } from "./proxies.ts";

const KEY = "hosted-key-0123";
let server: TestServer;
let client: HostedClient;
let dir: string;

beforeAll(async () => {
  server = await startTestServer(["--token", KEY]);
  client = new HostedClient({ baseUrl: server.url, apiKey: KEY });
  dir = await mkdtemp(join(tmpdir(), "flowgate-hosted-"));
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

function png(r: number, g: number, b: number): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 3, background: { r, g, b } } })
    .png()
    .toBuffer();
}

function samplerPrompt(steps: number) {
  return {
    "1": { class_type: "FlowgateSampler", inputs: { seed: Math.floor(Math.random() * 1e12), steps, width: 32, height: 32 } },
    "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "hosted" } },
  };
}

async function collect(events: AsyncIterable<HostedSocketEvent>): Promise<HostedSocketEvent[]> {
  const out: HostedSocketEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe("terminal statuses", () => {
  it("are exactly the five of the contract; every other value is in flight, known or not", () => {
    expect([...HOSTED_TERMINAL_STATUSES].sort()).toEqual(["cancelled", "error", "lost", "non_retryable_error", "success"]);
    for (const s of HOSTED_TERMINAL_STATUSES) expect(isHostedTerminal(s)).toBe(true);
    for (const s of ["submitted", "queued_waiting", "preparing", "executing", "cancel_requested", "warming_up", "", "succeeded"]) {
      expect(isHostedTerminal(s)).toBe(false);
    }
  });

  it("waitForTerminal keeps polling through in-flight values it has never heard of", async () => {
    const answers = ["submitted", "brand_new_state", "executing", "non_retryable_error"];
    const fake = async () => new Response(JSON.stringify({ status: answers.shift() }), { headers: { "content-type": "application/json" } });
    const seen: string[] = [];
    const hosted = new HostedClient({ baseUrl: "http://hosted.invalid", fetch: fake, sleep: recordingSleep().sleep });
    expect(await hosted.waitForTerminal("p", { onStatus: (s) => seen.push(s) })).toBe("non_retryable_error");
    expect(seen).toEqual(["submitted", "brand_new_state", "executing", "non_retryable_error"]);
  });
});

describe("hosted client", () => {
  it("uploads an image, queues a prompt using it, polls to success, and downloads the output", async () => {
    const upload = await client.uploadImage(await png(255, 0, 0), { filename: "red.png" });
    expect(upload.name).toMatch(/\.png$/);
    const { prompt_id } = await client.queuePrompt({
      "1": { class_type: "LoadImage", inputs: { image: upload.name } },
      "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: unique("inv") } },
    });
    expect(await client.waitForTerminal(prompt_id)).toBe("success");
    const entry = (await client.history(prompt_id))[prompt_id] as { outputs: Record<string, { images?: HostedFileInfo[] }> };
    const file = entry.outputs["3"]!.images![0]!;
    const path = await client.download(file, dir);
    const { data } = await sharp(await readFile(path))
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect([data[0], data[1], data[2]]).toEqual([0, 255, 255]);
  });

  it("an invalid prompt is a HostedApiError carrying ComfyUI's error body", async () => {
    const err = await client.queuePrompt({ "1": { class_type: "NoSuchNode", inputs: {} } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HostedApiError);
    expect((err as HostedApiError).status).toBe(400);
    expect((err as HostedApiError).body).toHaveProperty("node_errors");
  });

  it("a wrong key is refused (401) on REST and on the socket", async () => {
    const wrong = new HostedClient({ baseUrl: server.url, apiKey: "nope" });
    await expect(wrong.queue()).rejects.toMatchObject({ status: 401 });
    await expect(wrong.connect()).rejects.toThrow(/401/);
  });

  it("follows a prompt posted as text/plain, the way @saintno/comfyui-sdk posts it", async () => {
    const res = await fetch(`${server.url}/api/prompt`, {
      method: "POST",
      headers: { "X-API-Key": KEY, "content-type": "text/plain;charset=UTF-8" },
      body: JSON.stringify({ prompt: samplerPrompt(2), client_id: "text-plain" }),
    });
    expect(res.status).toBe(200);
    const { prompt_id } = (await res.json()) as { prompt_id: string };
    expect(await client.waitForTerminal(prompt_id)).toBe("success");
    const notJson = await fetch(`${server.url}/api/prompt`, { method: "POST", headers: { "X-API-Key": KEY, "content-type": "text/plain" }, body: "prompt=1" });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { error: { type: string } }).error.type).toBe("invalid_request");
  });

  it("cancels a running prompt through /api/queue", async () => {
    const { prompt_id } = await client.queuePrompt(delayGraph(30));
    await client.cancel([prompt_id]);
    expect(await client.waitForTerminal(prompt_id)).toBe("cancelled");
  });
});

describe("hosted WebSocket", () => {
  it("after the feature_flags handshake, previews arrive with this prompt's metadata, decoded", async () => {
    const socket = await client.connect();
    try {
      const { prompt_id } = await client.queuePrompt(samplerPrompt(5));
      const events = await collect(socket.follow(prompt_id));
      const types = events.flatMap((e) => (e.kind === "message" ? [e.message.type] : []));
      expect(types).toContain("execution_start");
      expect(types).toContain("progress");
      expect(types).toContain("executed");
      expect(types.at(-1)).toBe("execution_success");
      const previews = events.filter((e): e is Extract<HostedSocketEvent, { kind: "preview" }> => e.kind === "preview");
      expect(previews.length).toBeGreaterThan(0);
      for (const p of previews) {
        expect(p.metadata?.prompt_id).toBe(prompt_id);
        expect(p.metadata?.node_id).toBe("1");
        expect(p.contentType).toBe("image/jpeg");
        expect(p.image.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
      }
      const executed = events.find((e) => e.kind === "message" && e.message.type === "executed");
      expect(executed?.kind === "message" && executed.message.data).toMatchObject({ node: "2", prompt_id });
    } finally {
      socket.close();
    }
  });

  it("without the handshake, previews come as bare PREVIEW_IMAGE frames with no metadata", async () => {
    const socket = await client.connect({ previewMetadata: false });
    try {
      const { prompt_id } = await client.queuePrompt(samplerPrompt(3));
      const previews = (await collect(socket.follow(prompt_id))).filter((e) => e.kind === "preview");
      expect(previews.length).toBeGreaterThan(0);
      expect(previews.every((p) => p.kind === "preview" && p.metadata === null)).toBe(true);
    } finally {
      socket.close();
    }
  });
});

describe("/api/view downloads", () => {
  it("send the key to /api/view only: the redirect target sees no X-API-Key or Authorization", async () => {
    const storage = await startRecordingForwarder(server.url);
    const proxy = await startRedirectingProxy(server.url, storage.url);
    try {
      const viaProxy = new HostedClient({ baseUrl: proxy.url, apiKey: KEY });
      const { prompt_id } = await viaProxy.queuePrompt(samplerPrompt(2));
      expect(await viaProxy.waitForTerminal(prompt_id)).toBe("success");
      const entry = (await viaProxy.history(prompt_id))[prompt_id] as { outputs: Record<string, { images?: HostedFileInfo[] }> };
      const path = await viaProxy.download(entry.outputs["2"]!.images![0]!, dir);
      expect((await sharp(await readFile(path)).metadata()).format).toBe("png");

      const viewRequests = proxy.headers.filter((_, i) => proxy.seen[i]!.startsWith("GET /api/view"));
      expect(viewRequests).toHaveLength(1);
      expect(viewRequests[0]!["x-api-key"]).toBe(KEY);
      expect(storage.seen).toHaveLength(1);
      expect(storage.seen[0]).toMatch(/^GET \/api\/v2\/assets\/.+\/content\?/);
      for (const headers of storage.headers) {
        expect(headers["x-api-key"]).toBeUndefined();
        expect(headers.authorization).toBeUndefined();
        expect(JSON.stringify(headers)).not.toContain(KEY);
      }
    } finally {
      await proxy.stop();
      await storage.stop();
    }
  });
});
