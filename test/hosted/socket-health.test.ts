// WS-1 housekeeping: a socket that stops answering pings is closed and freed; one that answers
// stays.
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { engineAdapter } from "../../src/jobs/engine-adapter.ts";
import { startServer, type RunningServer } from "../../src/server/start.ts";
import { ComfyClient } from "./comfy-client.ts";
import { until } from "./hosted-server.ts";
import { PREVIEW_BACKLOG_BYTES } from "../../src/server/hosted/websocket.ts";

let server: RunningServer;
let slowServer: RunningServer;
const dataDirs: string[] = [];

/** A server whose sockets are pinged every `pingMs`. */
async function serverWithPing(pingMs: number): Promise<RunningServer> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "flowgate-ws-"));
  dataDirs.push(dataDir);
  const config = { ...loadConfig(["--port", "0", "--data-dir", dataDir], {}), wsPingIntervalMs: pingMs };
  return startServer(config, engineAdapter(new EmbeddedEngine()), { quiet: true });
}

beforeAll(async () => {
  // Rounds long enough that a live client on a loaded machine answers each ping in time.
  server = await serverWithPing(300);
  // A stalled reader must live long enough to fall behind: no ping round during the test.
  slowServer = await serverWithPing(600_000);
});
afterAll(async () => {
  await Promise.all([server.close(), slowServer.close()]);
  await Promise.all(dataDirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** Completes a WebSocket handshake on a raw socket that then never reads or answers a ping. */
function deadSocket(url: string): Promise<net.Socket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname, () => {
      s.write(
        `GET /ws?clientId=dead HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    s.once("data", (d) => {
      s.pause(); // from now on it reads nothing and answers nothing
      if (String(d).startsWith("HTTP/1.1 101")) resolve(s);
      else reject(new Error(String(d)));
    });
    s.on("error", () => undefined);
  });
}

describe("hosted socket health", () => {
  it("WS-1 closes a socket that misses a ping and keeps one that answers", async () => {
    const sockets = server.app.hostedSockets!;
    const live = new ComfyClient(server.url);
    await live.connect();
    const dead = await deadSocket(server.url);
    await until(async () => (sockets.size === 2 ? true : undefined));
    // The dead socket goes after two ping rounds; the live one went through the same rounds.
    await until(async () => (sockets.size === 1 ? true : undefined));
    expect(live.messages[0]?.type).toBe("status");
    const res = await live.queuePrompt({
      "1": { class_type: "PrimitiveString", inputs: { value: "still here" } },
      "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
    });
    const { prompt_id } = (await res.json()) as { prompt_id: string };
    expect((await live.waitForEnd(prompt_id)).map((m) => m.type)).toContain("execution_success");
    dead.destroy();
    live.close();
    await until(async () => (sockets.size === 0 ? true : undefined));
  });
});

describe("a slow reader", () => {
  it("WS-5 gets no more previews once it is behind, so its backlog stays bounded, while other sockets follow the run to its end", async () => {
    const sockets = slowServer.app.hostedSockets!;
    const live = new ComfyClient(slowServer.url);
    await live.connect();
    const stalled = await deadSocket(slowServer.url); // paused: reads nothing from here on
    await until(async () => (sockets.size === 2 ? true : undefined));
    // Many large previews: far more than the kernel's buffers and the preview backlog bound.
    const prompt = {
      "1": { class_type: "FlowgateSampler", inputs: { seed: 3, steps: 3000, width: 768, height: 768 } },
      "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
    };
    let maxSeen = 0;
    const watch = setInterval(() => (maxSeen = Math.max(maxSeen, sockets.maxBacklog)), 5);
    const { prompt_id } = (await (await live.queuePrompt(prompt)).json()) as { prompt_id: string };
    await live.waitForEnd(prompt_id, 120_000);
    clearInterval(watch);
    maxSeen = Math.max(maxSeen, sockets.maxBacklog);
    const previewBytes = live.binary.reduce((n, b) => n + b.length, 0);
    expect(previewBytes, `maxSeen ${maxSeen}`).toBeGreaterThan(PREVIEW_BACKLOG_BYTES * 2);
    // Bounded: at most the preview bound plus one preview and the small JSON messages after it.
    expect(maxSeen).toBeLessThan(PREVIEW_BACKLOG_BYTES + 1024 * 1024);
    expect(maxSeen).toBeGreaterThan(0);
    stalled.destroy();
    live.close();
  }, 180_000);
});
