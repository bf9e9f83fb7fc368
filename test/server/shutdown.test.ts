// A graceful stop finishes even with open event streams and with connections that never sent a
// request (pre-connects); requests in flight still complete; with a grace period, running jobs
// finish first.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/index.ts";
import { Api, delayGraph, expectValid, spawnCli, SseClient, startTestServer, upload, v, waitFor, type CliServer } from "./helpers.ts";

/** Resolves with "closed", or "hung" if close() has not finished long after it should. */
function closeOrHang(close: () => Promise<void>): Promise<string> {
  return Promise.race([close().then(() => "closed"), new Promise<string>((r) => setTimeout(() => r("hung"), 10_000).unref())]);
}

/** The status the store holds for `id` once the server is down. */
async function storedStatus(dataDir: string, id: string): Promise<string | undefined> {
  const store = await openStore({ dataDir });
  try {
    return (await store.getJob(id))?.status;
  } finally {
    await store.close();
  }
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
      return Readable.from(
        (async function* () {
          yield bytes.subarray(0, 10);
          await gate;
          yield bytes.subarray(10);
        })(),
      );
    };
    const agent = new http.Agent({ keepAlive: true });
    let headers!: () => void;
    const gotHeaders = new Promise<void>((r) => (headers = r));
    const body = new Promise<number>((resolve, reject) => {
      http
        .get(up.body.url, { agent }, (res) => {
          headers();
          let n = 0;
          res.on("data", (d: Buffer) => (n += d.length));
          res.on("end", () => resolve(n));
        })
        .on("error", reject);
    });
    await gotHeaders;
    const closing = closeOrHang(() => s.close());
    // Only once the server has stopped listening does the response finish.
    await waitFor(
      () => s.app.server.listening,
      (listening) => !listening,
      "the server stops listening",
    );
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

  it("a run whose start was committing when the stop came is stopped too", async () => {
    const s = await startTestServer();
    const store = s.runtime.store;
    const transition = store.transitionJob.bind(store);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    store.transitionJob = async (...args) => {
      if (args[2] === "running") await gate;
      return transition(...args);
    };
    const job = await s.api.submit(delayGraph(600));
    const closing = closeOrHang(() => s.close());
    await waitFor(
      () => s.runtime.readiness(),
      (r) => !r.dispatch,
      "the stop",
    );
    release();
    expect(await closing).toBe("closed");
    expect(await storedStatus(s.dataDir, job.id)).toBe("running");
    await s.stop();
  });
});

describe("stopping with a grace period", () => {
  it("lets a running job finish while HTTP still answers; queued jobs wait for the next start", async () => {
    const s = await startTestServer({ flags: ["--concurrency", "1"] });
    const running = await s.api.submit(delayGraph(1));
    await s.api.waitJob(running.id, (j) => j.status === "running", "running");
    const queued = await s.api.submit(delayGraph(1));
    const closing = closeOrHang(() => s.close({ graceMs: 60_000 }));
    // Draining: not ready, but still answering, and a submission is still taken (it queues).
    const ready = await s.api.get("/readyz");
    expect(ready.status).toBe(503);
    expectValid(v.response_getReadiness_503, ready.body);
    expect(ready.body).toEqual({ status: "not_ready", checks: { store: true, engine: true, queue: true, dispatch: false, storage: true, blobs: true } });
    const late = await s.api.submit(delayGraph(1));
    expect(late.status).toBe("queued");
    expect(await closing).toBe("closed");
    expect(await storedStatus(s.dataDir, running.id)).toBe("succeeded");
    expect(await storedStatus(s.dataDir, queued.id)).toBe("queued");
    expect(await storedStatus(s.dataDir, late.id)).toBe("queued");
    await s.stop();
  });

  it("stops what still runs when the grace period ends, or at once on a second stop", async () => {
    const s = await startTestServer({ flags: ["--concurrency", "2"] });
    const a = await s.api.submit(delayGraph(600));
    const b = await s.api.submit(delayGraph(600));
    for (const job of [a, b]) await s.api.waitJob(job.id, (j) => j.status === "running", "running");
    const started = Date.now();
    expect(await closeOrHang(() => s.close({ graceMs: 300 }))).toBe("closed");
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    // Left running: the next start ends it `worker_lost` (test/server/durability.test.ts).
    expect(await storedStatus(s.dataDir, a.id)).toBe("running");
    await s.stop();

    const t = await startTestServer();
    const c = await t.api.submit(delayGraph(600));
    await t.api.waitJob(c.id, (j) => j.status === "running", "running");
    const closing = closeOrHang(() => t.close({ graceMs: 600_000 }));
    await waitFor(
      () => t.api.get("/readyz"),
      (r) => r.status === 503,
      "draining",
    );
    void t.runtime.stopRuns(); // a second signal
    expect(await closing).toBe("closed");
    await t.stop();
  });
});

describe("flowgate serve and its signals", () => {
  /** Runs `body` on a fresh data dir; every server it spawned is gone afterwards. */
  async function withDataDir(body: (spawn: (extra: string[]) => Promise<CliServer>) => Promise<void>): Promise<void> {
    const dataDir = await mkdtemp(join(tmpdir(), "flowgate-drain-"));
    const children: CliServer[] = [];
    try {
      await body(async (extra) => {
        const c = await spawnCli(["--data-dir", dataDir, "--port", "0", ...extra]);
        children.push(c);
        return c;
      });
    } finally {
      for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill("SIGKILL");
      await rm(dataDir, { recursive: true, force: true });
    }
  }

  it("SIGTERM lets the running job finish (--shutdown-grace) and the queued one runs after a restart", () =>
    withDataDir(async (spawn) => {
      const flags = ["--concurrency", "1", "--shutdown-grace", "1m"];
      const first = await spawn(flags);
      const api = new Api(first.url);
      const running = await api.submit(delayGraph(2));
      await api.waitJob(running.id, (j) => j.status === "running", "running");
      const queued = await api.submit(delayGraph(0));
      first.child.kill("SIGTERM");
      expect(await first.exited).toBe(0);
      expect(first.output()).toMatch(/waiting up to 60s for 1 running job/);

      const second = await spawn(flags);
      const again = new Api(second.url);
      expect((await again.job(running.id)).status).toBe("succeeded");
      expect((await again.waitTerminal(queued.id)).status).toBe("succeeded");
      // Nothing runs now: SIGTERM stops at once.
      second.child.kill("SIGTERM");
      expect(await second.exited).toBe(0);
    }));

  it("a second SIGTERM stops the running job at once; it ends worker_lost at the next start", () =>
    withDataDir(async (spawn) => {
      const first = await spawn([]);
      const api = new Api(first.url);
      const running = await api.submit(delayGraph(600));
      await api.waitJob(running.id, (j) => j.status === "running", "running");
      first.child.kill("SIGTERM");
      await waitFor(
        () => first.output(),
        (out) => /waiting up to 25s/.test(out),
        "the drain message",
      );
      first.child.kill("SIGTERM");
      expect(await first.exited).toBe(0);

      const second = await spawn([]);
      const lost = await new Api(second.url).waitTerminal(running.id);
      expect(lost.status).toBe("failed");
      expect(lost.error.code).toBe("worker_lost");
      second.child.kill("SIGTERM");
      expect(await second.exited).toBe(0);
    }));
});
