// A graceful stop finishes even with open event streams and with connections that never sent a
// request (pre-connects); requests in flight still complete.
import { randomBytes } from "node:crypto";
import http from "node:http";
import net from "node:net";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { delayGraph, SseClient, startTestServer, upload, waitFor } from "./helpers.ts";

/** Resolves with "closed", or "hung" if close() has not finished long after it should. */
function closeOrHang(close: () => Promise<void>): Promise<string> {
  return Promise.race([close().then(() => "closed"), new Promise<string>((r) => setTimeout(() => r("hung"), 10_000).unref())]);
}

describe("stopping the server", () => {
  it("ends open event streams and drops request-less connections, so close() completes", async () => {
    const s = await startTestServer();
    const job = await s.api.submit(delayGraph(600));
    await s.api.waitJob(job.id, (j) => j.status === "running", "running");
    const stream = new SseClient(`${s.url}/api/v2/jobs/${job.id}/events`);
    await stream.waitUntil((c) => c.events.length >= 1, "snapshot");
    const { port, hostname } = new URL(s.url);
    const bare = net.connect(Number(port), hostname);
    await new Promise((r) => bare.once("connect", r));
    // close() of the running server itself, not the test helper (which forces connections shut).
    expect(await closeOrHang(() => s.close())).toBe("closed");
    await stream.done;
    expect(stream.ended).toBe(true);
    bare.destroy();
    await s.stop();
  });

  it("an open hosted WebSocket does not hold close() open", async () => {
    const s = await startTestServer();
    const ws = new WebSocket(`${s.url.replace(/^http/, "ws")}/ws?clientId=shutdown`);
    await new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = reject;
    });
    const closed = new Promise((resolve) => (ws.onclose = resolve));
    expect(await closeOrHang(() => s.close())).toBe("closed");
    await closed;
    await s.stop();
  });

  it("a keep-alive connection busy when close() starts is ended once its response is done", async () => {
    const s = await startTestServer();
    const up = await upload(s.api, [{ name: "file", file: randomBytes(1000) }]);
    // The content stream sends its first bytes (and so the headers), then stalls.
    const assets = s.runtime.assets;
    const open = assets.open.bind(assets);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    assets.open = async (asset, range) => {
      const whole = await open(asset, range);
      const chunks: Buffer[] = [];
      for await (const c of whole) chunks.push(c as Buffer);
      const bytes = Buffer.concat(chunks);
      return Readable.from((async function* () {
        yield bytes.subarray(0, 10);
        await gate;
        yield bytes.subarray(10);
      })());
    };
    const agent = new http.Agent({ keepAlive: true });
    let headers!: () => void;
    const gotHeaders = new Promise<void>((r) => (headers = r));
    const body = new Promise<number>((resolve, reject) => {
      http.get(`${s.url}/api/v2/assets/${up.body.id}/content`, { agent }, (res) => {
        headers();
        let n = 0;
        res.on("data", (d: Buffer) => (n += d.length));
        res.on("end", () => resolve(n));
      }).on("error", reject);
    });
    await gotHeaders;
    const closing = closeOrHang(() => s.close());
    // Only once the server has stopped listening does the response finish.
    await waitFor(() => s.app.server.listening, (listening) => !listening, "the server stops listening");
    release();
    expect(await body).toBe(1000);
    expect(await closing).toBe("closed");
    agent.destroy();
    assets.open = open;
    await s.stop();
  });

  it("lets a request in flight finish", async () => {
    const s = await startTestServer();
    const job = await s.api.submit(delayGraph(600));
    await s.api.waitJob(job.id, (j) => j.status === "running", "running");
    // Hold a request open across close() by stalling the handler's store read.
    const store = s.runtime.store;
    const getJob = store.getJob.bind(store);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    store.getJob = async (id) => {
      entered();
      await gate;
      return getJob(id);
    };
    const pending = s.api.get(`/api/v2/jobs/${job.id}`);
    await inside;
    const closing = closeOrHang(() => s.close());
    release();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await closing).toBe("closed");
    await s.stop();
  });
});
