// The hosted socket's writes: the messages one event-loop turn sends to a socket (a run's burst
// of events) leave in one write, so the client is woken once; in order, each frame whole.
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { engineAdapter } from "../../src/jobs/engine-adapter.ts";
import { startServer, type RunningServer } from "../../src/server/start.ts";

let server: RunningServer;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "flowgate-ws-writes-"));
  server = await startServer(loadConfig(["--port", "0", "--data-dir", dataDir], {}), engineAdapter(new EmbeddedEngine()), { quiet: true });
});
afterAll(async () => {
  await server.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

/** Counts the writes (system calls) the server makes on the connection whose far end is `port`. */
function countWrites(port: number): { readonly count: number; stop(): void } {
  const proto = net.Socket.prototype as unknown as Record<"_write" | "_writev", (...args: unknown[]) => unknown>;
  const original = { _write: proto._write, _writev: proto._writev };
  let count = 0;
  for (const name of ["_write", "_writev"] as const) {
    proto[name] = function (this: net.Socket, ...args: unknown[]) {
      if (this.remotePort === port) count++;
      return original[name].apply(this, args);
    };
  }
  return {
    get count() {
      return count;
    },
    stop: () => Object.assign(proto, original),
  };
}

describe("hosted socket writes", () => {
  it("sends a turn's messages in one write, in order", async () => {
    const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/ws?clientId=writes`, { perMessageDeflate: false });
    const received: Array<{ type: string; data: { node?: string } }> = [];
    ws.on("message", (data) => received.push(JSON.parse(String(data))));
    await new Promise((resolve) => ws.once("open", resolve));
    await until(() => received.some((m) => m.type === "status"));
    const { owner } = await server.runtime.surface.hostedCaller(null);
    const writes = countWrites((ws as unknown as { _socket: net.Socket })._socket.localPort!);
    try {
      for (const node of ["1", "2", "3", "4"])
        server.runtime.events.publish({ type: "node_start", job_id: "job-w", owner, node_id: node, class_type: "ImageInvert" });
      await until(() => received.filter((m) => m.type === "executing").length === 4);
      expect(received.filter((m) => m.type === "executing").map((m) => m.data.node)).toEqual(["1", "2", "3", "4"]);
      expect(writes.count).toBe(1);
    } finally {
      writes.stop();
      ws.close();
    }
  });
});
