// wait() and the transport under faults injected between the client and the real server:
// Retry-After honoured on every 429, upstream_error retried a bounded number of times, network
// failures survived, and a submission never repeated when its outcome is unknown.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlowgateClient, QueueFullError, UpstreamError } from "../../src/index.ts";
import { envelope, FaultyFetch, imageGraph, networkError, recordingSleep, route, startTestServer, type TestServer } from "./fixtures.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.stop();
});

const JOB_GET = route("GET", /^\/api\/v2\/jobs\/[^/]+$/);
const SUBMIT = route("POST", /^\/api\/v2\/jobs$/);

function clientWith(faults: FaultyFetch, retry = {}) {
  const clock = recordingSleep();
  return { client: new FlowgateClient({ baseUrl: server.url, fetch: faults.fetch, sleep: clock.sleep, retry }), delays: clock.delays };
}

describe("wait under faults", () => {
  it("honours Retry-After on every 429, whatever its code", async () => {
    const faults = new FaultyFetch()
      .add({ match: JOB_GET, respond: () => envelope(429, "rate_limited", 3), times: 2 })
      .add({ match: JOB_GET, respond: () => envelope(429, "some_future_code", 5), times: 1 });
    const { client, delays } = clientWith(faults);
    const job = await client.submit(imageGraph());
    expect((await client.wait(job)).status).toBe("succeeded");
    expect(faults.matching("GET", /jobs\/[^/]+$/).filter((r) => r.outcome === 429)).toHaveLength(3);
    expect(delays.filter((d) => d === 3000)).toHaveLength(2);
    expect(delays).toContain(5000);
  });

  it("retries 500 upstream_error a bounded number of times, then succeeds", async () => {
    const faults = new FaultyFetch().add({ match: JOB_GET, respond: () => envelope(500, "upstream_error"), times: 2 });
    const { client } = clientWith(faults, { upstreamRetries: 3 });
    const job = await client.submit(imageGraph());
    expect((await client.wait(job)).status).toBe("succeeded");
    expect(faults.seen.filter((r) => r.outcome === 500)).toHaveLength(2);
  });

  it("gives up with UpstreamError after the bound when upstream_error persists", async () => {
    const faults = new FaultyFetch().add({ match: JOB_GET, respond: () => envelope(500, "upstream_error"), times: 1000 });
    const { client } = clientWith(faults, { upstreamRetries: 3 });
    const job = await client.submit(imageGraph());
    const err = await client.wait(job).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(faults.matching("GET", /jobs\/[^/]+$/)).toHaveLength(1 + 3);
  });

  it("survives network failures, more of them in a row than the transport retries", async () => {
    const faults = new FaultyFetch().add({ match: JOB_GET, respond: () => networkError(), times: 9 });
    const { client } = clientWith(faults, { networkRetries: 2 });
    const job = await client.submit(imageGraph());
    expect((await client.wait(job)).status).toBe("succeeded");
    expect(faults.seen.filter((r) => r.outcome === "network-error")).toHaveLength(9);
  });

  it("stops when its signal aborts", async () => {
    const faults = new FaultyFetch().add({ match: JOB_GET, respond: () => networkError(), times: 1_000_000 });
    const { client } = clientWith(faults);
    const job = await client.submit(imageGraph());
    const controller = new AbortController();
    const waiting = client.wait(job, { signal: controller.signal });
    controller.abort(new Error("stop"));
    await expect(waiting).rejects.toThrow("stop");
  });
});

describe("submit under faults", () => {
  it("retries a 429 after Retry-After with the same Idempotency-Key (the key was released)", async () => {
    const faults = new FaultyFetch().add({ match: SUBMIT, respond: () => envelope(429, "queue_full", 2), times: 1 });
    const { client, delays } = clientWith(faults);
    const job = await client.submit(imageGraph());
    expect(job.status).toBe("queued");
    const keys = faults.matching("POST", /^\/api\/v2\/jobs$/).map((r) => r.headers["idempotency-key"]);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
    expect(delays).toContain(2000);
  });

  it("gives up on 429 after the bound with the typed error and its retryAfter", async () => {
    const faults = new FaultyFetch().add({ match: SUBMIT, respond: () => envelope(429, "queue_full", 1), times: 100 });
    const { client } = clientWith(faults, { rateLimitRetries: 2 });
    const err = await client.submit(imageGraph()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QueueFullError);
    expect((err as QueueFullError).retryAfter).toBe(1);
    expect(faults.seen).toHaveLength(3);
  });

  it("never repeats a submission after upstream_error or a network failure (the job may exist)", async () => {
    for (const respond of [() => envelope(500, "upstream_error"), () => networkError()]) {
      const faults = new FaultyFetch().add({ match: SUBMIT, respond, times: 1 });
      const { client } = clientWith(faults);
      await expect(client.submit(imageGraph())).rejects.toBeTruthy();
      expect(faults.matching("POST", /^\/api\/v2\/jobs$/)).toHaveLength(1);
    }
  });
});
