// stream(): SSE events from the real server; a fallback to polling when the stream cannot be
// used; a GET resync after every reconnect; the terminal status always read with GET.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlowgateClient, type JobEvent } from "../../src/index.ts";
import { delayGraph, envelope, FaultyFetch, networkError, recordingSleep, route, samplerGraph, startTestServer, type TestServer } from "./fixtures.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.stop();
});

const EVENTS = route("GET", /\/events$/);

async function collect(stream: AsyncIterable<JobEvent>): Promise<JobEvent[]> {
  const events: JobEvent[] = [];
  for await (const e of stream) events.push(e);
  return events;
}

/** A response whose body stops with an error after its first chunk: a connection cut mid-stream. */
function cutAfterFirstChunk(response: Response): Response {
  const reader = response.body!.getReader();
  let sent = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent) {
        await reader.cancel();
        return controller.error(new TypeError("terminated"));
      }
      const { value, done } = await reader.read();
      if (done) return controller.close();
      sent = true;
      controller.enqueue(value);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}

describe("stream", () => {
  it("yields status, progress, preview and output events, and ends with the terminal status read by GET", async () => {
    const client = new FlowgateClient({ baseUrl: server.url });
    const job = await client.submit(samplerGraph(400)); // long enough (about a second) for step snapshots to pass the stream's 4-a-second progress bound
    const events = await collect(client.stream(job));
    const names = new Set(events.map((e) => e.event));
    expect(names).toEqual(new Set(["status", "progress", "preview", "output"]));
    expect(events.some((e) => e.source === "stream")).toBe(true);
    const steps = events.flatMap((e) => (e.event === "progress" && e.data.step ? [e.data.step] : []));
    expect(steps.length).toBeGreaterThan(0);
    const preview = events.find((e) => e.event === "preview")!;
    expect(preview.event === "preview" && Buffer.from(preview.data.data_base64, "base64").subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    const output = events.find((e) => e.event === "output");
    expect(output?.event === "output" && output.data.url).toMatch(/^http:\/\//);
    const last = events.at(-1)!;
    expect(last.event).toBe("status");
    expect(last.source).toBe("poll");
    expect(last.event === "status" && last.data.status).toBe("succeeded");
  });

  it("falls back to polling when the stream is refused, and tries it again after Retry-After", async () => {
    const faults = new FaultyFetch().add({ match: EVENTS, respond: () => envelope(429, "too_many_streams", 2), times: 1_000 });
    const clock = recordingSleep();
    const client = new FlowgateClient({ baseUrl: server.url, fetch: faults.fetch, sleep: clock.sleep });
    const job = await client.submit(delayGraph(1));
    const events = await collect(client.stream(job, { pollIntervalMs: 500 }));
    expect(events.every((e) => e.source === "poll")).toBe(true);
    const statuses = events.flatMap((e) => (e.event === "status" ? [e.data.status] : []));
    expect(statuses).toContain("running");
    expect(statuses.at(-1)).toBe("succeeded");
    // Between the first two attempts at the stream: Retry-After 2 s spent as four polls of 500 ms.
    const order = faults.seen.map((r) => (r.path.endsWith("/events") ? "events" : "get"));
    const first = order.indexOf("events");
    const second = order.indexOf("events", first + 1);
    expect(second, order.join(",")).toBeGreaterThan(first);
    expect(order.slice(first + 1, second)).toEqual(["get", "get", "get", "get"]);
    expect(clock.delays.slice(0, 4)).toEqual([500, 500, 500, 500]);
  });

  it("falls back to polling when the stream cannot be reached at all", async () => {
    const faults = new FaultyFetch().add({ match: EVENTS, respond: () => networkError(), times: 1_000 });
    const client = new FlowgateClient({ baseUrl: server.url, fetch: faults.fetch, sleep: recordingSleep().sleep });
    const job = await client.submit(delayGraph(0.3));
    const events = await collect(client.stream(job));
    expect(events.at(-1)?.event === "status" && events.at(-1)?.data).toMatchObject({ status: "succeeded" });
  });

  it("after the stream is cut, re-reads the job with GET before reconnecting", async () => {
    const faults = new FaultyFetch();
    let cuts = 0;
    faults.transform = (request, response) => (EVENTS(request) && cuts++ === 0 ? cutAfterFirstChunk(response) : response);
    const client = new FlowgateClient({ baseUrl: server.url, fetch: faults.fetch, sleep: recordingSleep().sleep });
    const job = await client.submit(delayGraph(1));
    // A reconnect delay shorter than the poll interval: no poll falls between the two attempts,
    // so the one GET there is the resync.
    const events = await collect(client.stream(job, { reconnectDelayMs: 100, pollIntervalMs: 1000 }));
    const order = faults.seen.map((r) => (r.path.endsWith("/events") ? "events" : r.method === "GET" ? "get" : "other"));
    const firstEvents = order.indexOf("events");
    const secondEvents = order.indexOf("events", firstEvents + 1);
    expect(secondEvents, order.join(",")).toBeGreaterThan(firstEvents);
    expect(order.slice(firstEvents + 1, secondEvents)).toEqual(["get"]);
    expect(events.at(-1)?.event === "status" && events.at(-1)?.data).toMatchObject({ status: "succeeded" });
  });

  it("tells onConnection when a stream opens and when it is lost, and waits at most the reconnect delay before reopening", async () => {
    const faults = new FaultyFetch();
    let cuts = 0;
    faults.transform = (request, response) => (EVENTS(request) && cuts++ === 0 ? cutAfterFirstChunk(response) : response);
    const clock = recordingSleep();
    const client = new FlowgateClient({ baseUrl: server.url, fetch: faults.fetch, sleep: clock.sleep });
    const job = await client.submit(delayGraph(1));
    const states: string[] = [];
    const events = await collect(client.stream(job, { reconnectDelayMs: 100, pollIntervalMs: 1000, onConnection: (s) => states.push(s) }));
    expect(states).toEqual(["open", "lost", "open"]);
    // Equal jitter: between half the delay and the whole of it.
    expect(clock.delays[0]).toBeGreaterThanOrEqual(50);
    expect(clock.delays[0]).toBeLessThanOrEqual(100);
    expect(events.at(-1)?.event === "status" && events.at(-1)?.data).toMatchObject({ status: "succeeded" });
  });

  it("the stream's own terminal status is confirmed with GET before it is yielded", async () => {
    const faults = new FaultyFetch();
    const client = new FlowgateClient({ baseUrl: server.url, fetch: faults.fetch });
    const job = await client.submit(delayGraph(0.2));
    await collect(client.stream(job));
    const last = faults.seen.at(-1)!;
    expect(last.method).toBe("GET");
    expect(last.path).toBe(`/api/v2/jobs/${job.id}`);
  });
});
