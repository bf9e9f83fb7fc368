// GET /api/v2/jobs/{id}/events: the snapshot on connect, a status on every transition to every
// open stream, throttled progress, previews, outputs, keep-alives, the close after the terminal
// status, the per-caller limit, and no resource left behind by a disconnect.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  delayGraph,
  expectError,
  expectSseEventsValid,
  imageGraph,
  rawGet,
  SseClient,
  startTestServer,
  TERMINAL,
  v,
  waitFor,
  type TestServer,
} from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ flags: ["--concurrency", "1"], config: { sseKeepAliveMs: 100, maxStreamsPerCaller: 3 } });
});
afterAll(async () => {
  await s?.stop();
});

function open(id: string): SseClient {
  return new SseClient(`${s.url}/api/v2/jobs/${id}/events`);
}

async function waitNoStreams(server: TestServer): Promise<void> {
  await waitFor(
    () => ({ streams: server.app.eventStreams.size, listeners: server.runtime.events.listenerCount() }),
    (x) => x.streams === 0 && x.listeners === 0,
    "every stream and subscription released",
  );
}

describe("the stream", () => {
  it("OUT-5 signs the links of a late event when it is sent, not when the stream opened", async () => {
    const blocker = await s.api.submit(delayGraph(30));
    await s.api.waitJob(blocker.id, (j) => j.status === "running", "blocker running");
    const job = await s.api.submit(imageGraph("late-links"));
    const stream = open(job.id);
    await stream.waitUntil((c) => c.of("status").length >= 1, "snapshot");
    s.clock.advance(2 * 3_600_000); // longer than a link lives
    await s.api.post(`/api/v2/jobs/${blocker.id}/cancel`);
    await stream.done;
    const end = stream.of("status").at(-1)!.json;
    expect(end.status).toBe("succeeded");
    expect(Date.parse(end.outputs[0].url_expires_at)).toBeGreaterThan(s.clock.now() + 3_600_000 - 1000);
    expect((await fetch(end.outputs[0].url)).status).toBe(200);
  });

  it("SSE-1 SSE-2 SSE-3 PRG-4 sends the snapshot, every transition, progress, previews and outputs, then closes", async () => {
    const blocker = await s.api.submit(delayGraph(30));
    await s.api.waitJob(blocker.id, (j) => j.status === "running", "blocker running");
    const workflow = {
      "1": { class_type: "FlowgateSampler", inputs: { seed: Math.floor(Math.random() * 1e9), steps: 30, width: 64, height: 64 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "sse" } },
    };
    const job = await s.api.submit(workflow);
    const a = open(job.id);
    const b = open(job.id);
    await a.waitUntil((c) => c.of("status").length >= 1, "snapshot a");
    await b.waitUntil((c) => c.of("status").length >= 1, "snapshot b");
    expect(a.status).toBe(200);
    expect(a.headers?.get("content-type")).toMatch(/^text\/event-stream/);
    expect(a.of("status")[0]!.json).toMatchObject({ id: job.id, status: "queued", queue_position: 0 });

    await s.api.post(`/api/v2/jobs/${blocker.id}/cancel`);
    await a.done;
    await b.done;
    const final = await s.api.job(job.id);
    expect(final.status).toBe("succeeded");

    for (const c of [a, b]) {
      expectSseEventsValid(c.events);
      expect(c.raw).not.toMatch(/^id:/m);
      const statuses = c.of("status").map((e) => e.json.status);
      expect(statuses).toEqual(["queued", "running", "succeeded"]);
      // After the terminal status nothing follows and the server closed the stream.
      expect(c.events.at(-1)!.event).toBe("status");
      expect(c.ended).toBe(true);
      const progress = c.of("progress").map((e) => e.json);
      expect(progress.length).toBeGreaterThan(0);
      for (let i = 1; i < progress.length; i++) expect(progress[i].value).toBeGreaterThanOrEqual(progress[i - 1].value);
      // The last progress is the job's own final snapshot.
      expect(progress.at(-1)).toEqual(final.progress);
      expect(c.of("preview").length).toBeGreaterThan(0);
      for (const p of c.of("preview")) {
        expect(p.json.node_id).toBe("1");
        expect(Buffer.from(p.json.data_base64, "base64").subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
      }
      const outputs = c.of("output").map((e) => e.json);
      expect(outputs.map((o) => o.id)).toEqual(final.outputs.map((o: any) => o.id));
      const terminal = c.of("status").at(-1)!.json;
      expect(terminal.outputs.map((o: any) => o.id)).toEqual(final.outputs.map((o: any) => o.id));
      expect(terminal.progress).toEqual(final.progress);
    }
    await waitNoStreams(s);
  });

  it("SSE-2 a connection to a terminal job gets the terminal status and is closed", async () => {
    const job = await s.api.submit(imageGraph());
    await s.api.waitTerminal(job.id);
    const c = open(job.id);
    await c.done;
    expect(c.events.map((e) => e.event)).toEqual(["status"]);
    expect(c.events[0]!.json.status).toBe("succeeded");
    expectSseEventsValid(c.events);
  });

  it("SSE-2 CAN-2 cancel transitions reach the stream: running, canceling, canceled", async () => {
    const job = await s.api.submit(delayGraph(30));
    const c = open(job.id);
    await c.waitUntil((x) => x.of("status").some((e) => e.json.status === "running"), "running");
    await s.api.post(`/api/v2/jobs/${job.id}/cancel`);
    await c.done;
    const statuses = c.of("status").map((e) => e.json.status);
    expect(statuses.slice(-2)).toEqual(["canceling", "canceled"]);
    expect(TERMINAL).toContain(statuses.at(-1));
    expectSseEventsValid(c.events);
  });

  it("SSE-2 never steps back: a status older than the one a stream has is not written", async () => {
    const job = await s.api.submit(delayGraph(30));
    const c = open(job.id);
    await c.waitUntil((x) => x.of("status").some((e) => e.json.status === "running"), "running");
    // Two changes made durable by one fsync may be published in either order; a read may show a
    // change before its event: reports of an older status reach the stream late.
    const record = (await s.runtime.currentJob(job.id))!;
    s.runtime.events.publish({ type: "status", job: { ...record, status: "queued", started_at: null } });
    s.runtime.events.publish({ type: "status", job: record });
    await s.api.post(`/api/v2/jobs/${job.id}/cancel`);
    await c.done;
    expect(c.of("status").map((e) => e.json.status)).toEqual(["running", "canceling", "canceled"]);
  });

  it("PRG-2 never steps back: a progress snapshot older than one the stream has is not written", async () => {
    const job = await s.api.submit(delayGraph(30));
    const c = open(job.id);
    await c.waitUntil((x) => x.of("progress").length >= 1 && x.of("status").some((e) => e.json.status === "running"), "running with progress");
    const current = c.of("progress").at(-1)!.json;
    // A snapshot published before the one the stream has, reaching it late (a read, or a relay
    // from another process), then a newer one.
    s.runtime.events.publish({ type: "progress", job_id: job.id, owner: "", progress: { ...current, value: current.value / 2, message: "older" } });
    s.runtime.events.publish({
      type: "progress",
      job_id: job.id,
      owner: "",
      progress: { ...current, value: Math.min(1, current.value + 0.01), message: "newer" },
    });
    await c.waitUntil((x) => x.of("progress").some((e) => e.json.message === "newer"), "the newer snapshot");
    expect(c.of("progress").map((e) => e.json.message)).not.toContain("older");
    const values = c.of("progress").map((e) => e.json.value as number);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    await s.api.post(`/api/v2/jobs/${job.id}/cancel`);
    await c.done;
  });

  it("progress is throttled: a burst of snapshots reaches a stream as the first and the latest", async () => {
    const job = await s.api.submit(delayGraph(30));
    await s.api.waitJob(job.id, (j) => j.status === "running", "running");
    const c = open(job.id);
    await c.waitUntil((x) => x.of("progress").length >= 1, "the connect-time progress");
    const before = c.of("progress").length;
    const snapshot = (i: number) => ({
      value: 0.5 + i / 1000,
      nodes_done: 1,
      nodes_total: 3,
      current_node: "2",
      current_node_class: "FlowgateDelay",
      step: i,
      steps: 1000,
      message: null,
    });
    // Injected on the bus in one go, as a fast sampler would report them.
    for (let i = 1; i <= 200; i++) s.runtime.events.publish({ type: "progress", job_id: job.id, owner: "", progress: snapshot(i) });
    await c.waitUntil((x) => x.of("progress").at(-1)?.json.step === 200, "the latest snapshot");
    const burst = c
      .of("progress")
      .slice(before)
      .map((e) => e.json.step);
    expect(burst.length).toBeLessThanOrEqual(2);
    expect(burst.at(-1)).toBe(200);
    c.close();
    await s.api.post(`/api/v2/jobs/${job.id}/cancel`);
    await s.api.waitTerminal(job.id);
  });

  it("previews are latest-wins: a 3,000-step sampler sends at most --stream-preview-rate a second, then the last progress and the end", async () => {
    const r = await startTestServer({ flags: ["--stream-preview-rate", "3"] });
    try {
      let published = 0;
      const off = r.runtime.events.subscribeAll((e) => void (e.type === "preview" && published++));
      const job = await r.api.submit({
        "1": { class_type: "FlowgateSampler", inputs: { seed: Math.floor(Math.random() * 1e9), steps: 3000, width: 64, height: 64 } },
        "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "flood" } },
      });
      const opened = performance.now();
      const c = new SseClient(`${r.url}/api/v2/jobs/${job.id}/events`);
      await c.done;
      const elapsedS = (performance.now() - opened) / 1000;
      off();
      const final = await r.api.job(job.id);
      expect(final.status).toBe("succeeded");
      expectSseEventsValid(c.events);
      const previews = c.of("preview").length;
      // The engine reported (nearly) every step; the stream sent a bounded few of them.
      expect(published).toBeGreaterThan(1000);
      expect(previews).toBeGreaterThan(0);
      expect(previews).toBeLessThanOrEqual(3 * elapsedS + 1);
      // Never dropped: the last progress is the job's own, and the terminal status ends the stream.
      expect(c.of("progress").at(-1)!.json).toEqual(final.progress);
      expect(c.events.at(-1)!.event).toBe("status");
      expect(c.events.at(-1)!.json.status).toBe("succeeded");
    } finally {
      await r.stop();
    }
  });

  it("SSE-1 sends keep-alive comments while nothing happens", async () => {
    const job = await s.api.submit(delayGraph(30));
    const c = open(job.id);
    await c.waitUntil((x) => x.comments.filter((t) => t === "keep-alive").length >= 2, "two keep-alives");
    c.close();
    await s.api.post(`/api/v2/jobs/${job.id}/cancel`);
    await s.api.waitTerminal(job.id);
  });

  it("SSE-4 a stream opened mid-run gets the current job, the latest progress, and then live events", async () => {
    const workflow = {
      "1": { class_type: "FlowgateSampler", inputs: { seed: Math.floor(Math.random() * 1e9), steps: 10000, width: 32, height: 32 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "mid" } },
    };
    const job = await s.api.submit(workflow);
    await s.api.waitJob(job.id, (j) => (j.progress?.step ?? 0) > 5, "some steps");
    const c = open(job.id);
    await c.waitUntil((x) => x.of("progress").length >= 1 && x.of("preview").length >= 1, "progress and preview replay");
    expect(c.events[0]!.event).toBe("status");
    expect(c.events[0]!.json.status).toBe("running");
    expect(c.events[0]!.json.progress.step).toBeGreaterThan(5);
    await s.api.post(`/api/v2/jobs/${job.id}/cancel`);
    await c.done;
    expectSseEventsValid(c.events);
    expect(c.of("status").at(-1)!.json.status).toBe("canceled");
  });

  it("HEAD answers the stream's headers without holding a stream open", async () => {
    const job = await s.api.submit(delayGraph(30));
    const res = await s.api.request("HEAD", `/api/v2/jobs/${job.id}/events`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(s.app.eventStreams.size).toBe(0);
    expect(s.runtime.events.listenerCount()).toBe(0);
    // The connection is free for the next request.
    expect((await s.api.get(`/api/v2/jobs/${job.id}`)).status).toBe(200);
    await s.api.post(`/api/v2/jobs/${job.id}/cancel`);
    await s.api.waitTerminal(job.id);
  });

  it("an unknown job is 404 in the envelope, not a stream", async () => {
    const res = await s.api.get("/api/v2/jobs/0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42/events");
    expectError(res, 404, "not_found", v.response_streamJobEvents_404);
  });
});

describe("limits and resources", () => {
  it("SSE too many streams: 429 too_many_streams with Retry-After past the per-caller limit", async () => {
    const job = await s.api.submit(delayGraph(30));
    const clients = [open(job.id), open(job.id), open(job.id)];
    for (const c of clients) await c.waitUntil((x) => x.events.length >= 1, "snapshot");
    const res = await s.api.get(`/api/v2/jobs/${job.id}/events`);
    expectError(res, 429, "too_many_streams", v.response_streamJobEvents_429);
    clients[0]!.close();
    await waitFor(
      () => s.app.eventStreams.size,
      (n) => n === 2,
      "one stream released",
    );
    const again = open(job.id);
    await again.waitUntil((x) => x.events.length >= 1, "admitted again");
    for (const c of [...clients, again]) c.close();
    await s.api.post(`/api/v2/jobs/${job.id}/cancel`);
    await waitNoStreams(s);
  });

  it("SSE --max-streams-per-caller bounds streams per caller; an open server counts each client address apart", async () => {
    /** A stream from `localAddress` (any of 127/8 reaches the loopback server): its status once admitted or refused. */
    const openFrom = (url: string, localAddress: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; close(): void }>((resolve, reject) => {
        const req = http.get(url, { localAddress, headers }, (res) => {
          const answer = { status: res.statusCode ?? 0, close: () => req.destroy() };
          // Admitted once the snapshot arrives (the stream is counted by then); a refusal ends.
          if (res.statusCode === 200) res.once("data", () => resolve(answer));
          else res.resume().once("end", () => resolve(answer));
        });
        req.once("error", reject);
      });
    for (const token of [null, "per-caller-token"]) {
      const r = await startTestServer({ flags: ["--max-streams-per-caller", "1", ...(token ? ["--token", token] : [])] });
      try {
        expect(r.config.maxStreamsPerCaller).toBe(1);
        const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
        const job = (await r.api.post("/api/v2/jobs", { workflow: delayGraph(60) }, { headers: auth })).body;
        const url = `${r.url}/api/v2/jobs/${job.id}/events`;
        const first = await openFrom(url, "127.0.0.1", auth);
        expect(first.status).toBe(200);
        const same = await openFrom(url, "127.0.0.1", auth);
        expect(same.status).toBe(429);
        // Another address: another anonymous caller on an open server, the same caller with a token.
        const other = await openFrom(url, "127.0.0.2", auth);
        expect(other.status, token ? "with a token" : "open").toBe(token ? 429 : 200);
        for (const c of [first, same, other]) c.close();
        await waitNoStreams(r);
        await r.api.post(`/api/v2/jobs/${job.id}/cancel`, undefined, { headers: auth });
      } finally {
        await r.stop();
      }
    }
  });

  it("a client gone before the stream is set up leaves nothing behind", async () => {
    const r = await startTestServer();
    try {
      const job = await r.api.submit(delayGraph(60));
      await r.api.waitJob(job.id, (j) => j.status === "running", "running");
      // The ownership check stalls until the server has seen every client hang up.
      const jobs = r.runtime.jobs;
      const owned = jobs.owned.bind(jobs);
      let entered = 0;
      let returned = 0;
      let allIn!: () => void;
      const everyoneIn = new Promise<void>((resolve) => (allIn = resolve));
      let serverClosed = 0;
      r.app.server.on("connection", (socket) => socket.on("close", () => serverClosed++));
      jobs.owned = async (caller, id) => {
        if (++entered === 5) allIn();
        await everyoneIn;
        await waitFor(
          () => serverClosed,
          (n) => n >= 5,
          "the server saw every hang-up",
        );
        const record = await owned(caller, id);
        returned++;
        return record;
      };
      try {
        const url = `${r.url}/api/v2/jobs/${job.id}/events`;
        await Promise.all(Array.from({ length: 5 }, () => rawGet(url, everyoneIn)));
        // The handlers go on to set up streams for clients that are gone.
        await waitFor(
          () => returned,
          (n) => n === 5,
          "every handler past the check",
        );
      } finally {
        jobs.owned = owned;
      }
      await waitNoStreams(r);
    } finally {
      await r.stop();
    }
  });

  it("a disconnect frees everything: 1,000 connect/disconnect cycles leave no stream or subscription", async () => {
    const r = await startTestServer({ config: { maxStreamsPerCaller: 1000 } });
    try {
      const job = await r.api.submit(delayGraph(60));
      await r.api.waitJob(job.id, (j) => j.status === "running", "running");
      const url = `${r.url}/api/v2/jobs/${job.id}/events`;
      const modes = ["sent", "headers", "first-byte"] as const;
      for (let batch = 0; batch < 20; batch++) {
        await Promise.all(Array.from({ length: 50 }, (_, i) => rawGet(url, modes[(batch + i) % 3]!)));
      }
      await waitNoStreams(r);
      // The server still streams normally afterwards.
      const c = new SseClient(url);
      await c.waitUntil((x) => x.events.length >= 1, "a stream after the cycles");
      expect(r.app.eventStreams.size).toBe(1);
      c.close();
      await waitNoStreams(r);
    } finally {
      await r.stop();
    }
  });
});
