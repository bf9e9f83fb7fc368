// The hosted socket's writes: the messages one event-loop turn sends to a socket (a run's burst
// of events) leave in one write, so the client is woken once; in order, each frame whole. And its
// previews: one heard before its node's start (a run of another process: previews come through
// Redis, the node's start through PostgreSQL) follows that node's `executing`, where a client puts
// a plain preview frame; one of a node that never starts is never sent, one of a node that runs is
// sent at once, and one of a node that finished once another started is dropped.
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
  dataDir = await mkdtemp(path.join(tmpdir(), "flowgate-ws-"));
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

describe("hosted socket previews", () => {
  it("a preview heard before its node's start follows that node's executing; one of a node that did not start is not sent", async () => {
    const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/ws?clientId=previews`, { perMessageDeflate: false });
    const received: string[] = [];
    ws.on("message", (data, isBinary) => {
      if (isBinary) received.push(`preview ${(data as Buffer).subarray(8).toString()}`);
      else {
        const m = JSON.parse(String(data)) as { type: string; data: { node?: string } };
        if (m.type === "executing") received.push(`executing ${m.data.node}`);
        if (m.type === "status") received.push("status");
      }
    });
    await new Promise((resolve) => ws.once("open", resolve));
    await until(() => received.includes("status"));
    received.length = 0;
    const { owner } = await server.runtime.surface.hostedCaller(null);
    const { events } = server.runtime;
    const base = { job_id: "job-early-preview", owner };
    const preview = (node: string) => events.publish({ type: "preview", ...base, node_id: node, content_type: "image/jpeg", data: Buffer.from(`of ${node}`) });
    try {
      events.publish({ type: "node_start", ...base, node_id: "1", class_type: "KSampler" });
      preview("1");
      preview("3"); // heard before node 3 started: held, then replaced by a newer one
      preview("2"); // heard before node 2 started: held
      events.publish({ type: "node_start", ...base, node_id: "2", class_type: "KSampler" });
      preview("2");
      preview("1"); // node 1 still runs (beside node 2, as parallel branches do): at once
      await until(() => received.length === 6);
      expect(received).toEqual(["executing 1", "preview of 1", "executing 2", "preview of 2", "preview of 2", "preview of 1"]);
      events.publish({ type: "node_done", ...base, node_id: "2", class_type: "KSampler", ui: null });
      events.publish({ type: "node_start", ...base, node_id: "3", class_type: "KSampler" });
      preview("2"); // node 2 finished and node 3 runs: not sent (ComfyUI previews a node while it runs)
      preview("3");
      await until(() => received.length === 8);
      expect(received.slice(6)).toEqual(["executing 3", "preview of 3"]);
    } finally {
      ws.close();
    }
  });
});
