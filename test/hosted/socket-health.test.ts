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

let server: RunningServer;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "flowgate-ws-"));
  const config = { ...loadConfig(["--port", "0", "--data-dir", dataDir], {}), wsPingIntervalMs: 50 };
  server = await startServer(config, engineAdapter(new EmbeddedEngine()), { quiet: true });
});
afterAll(async () => {
  await server.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** Completes a WebSocket handshake on a raw socket that then never reads or answers a ping. */
function deadSocket(url: string): Promise<net.Socket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname, () => {
      s.write(`GET /ws?clientId=dead HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
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
    const res = await live.queuePrompt({ "1": { class_type: "PrimitiveString", inputs: { value: "still here" } }, "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } });
    const { prompt_id } = (await res.json()) as { prompt_id: string };
    expect((await live.waitForEnd(prompt_id)).map((m) => m.type)).toContain("execution_success");
    dead.destroy();
    live.close();
    await until(async () => (sockets.size === 0 ? true : undefined));
  });
});
