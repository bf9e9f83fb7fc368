// The v2 client against the real server: submit (UUID idempotency key by default), get, list,
// cancel, wait with onProgress, and typed errors for the contract's error answers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FlowgateClient,
  IdempotencyKeyReuseError,
  InvalidWorkflowError,
  NotFoundError,
  UnauthorizedError,
  WorkflowFormatUiError,
  type Job,
} from "../../src/index.ts";
import { delayGraph, failingGraph, FaultyFetch, imageGraph, samplerGraph, startTestServer, waitFor, type TestServer } from "./fixtures.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer(["--concurrency", "2"]);
});
afterAll(async () => {
  await server?.stop();
});

describe("v2 client: jobs", () => {
  it("submits with a fresh UUID Idempotency-Key each time, and returns absolute links", async () => {
    const recorder = new FaultyFetch();
    const client = new FlowgateClient({ baseUrl: server.url, fetch: recorder.fetch });
    const a = await client.submit(imageGraph());
    const b = await client.submit(imageGraph());
    expect(a.status).toBe("queued");
    const keys = recorder.matching("POST", /^\/api\/v2\/jobs$/).map((r) => r.headers["idempotency-key"]);
    expect(keys).toHaveLength(2);
    for (const key of keys) expect(key).toMatch(UUID);
    expect(keys[0]).not.toBe(keys[1]);
    expect(a.urls.self).toBe(`${server.url}/api/v2/jobs/${a.id}`);
    expect(a.urls.events).toBe(`${server.url}/api/v2/jobs/${a.id}/events`);
    expect(b.id).not.toBe(a.id);
  });

  it("an explicit key is single-use: the second submission is IdempotencyKeyReuseError and never runs", async () => {
    const client = new FlowgateClient({ baseUrl: server.url });
    const key = crypto.randomUUID();
    await client.submit(imageGraph(), { idempotencyKey: key });
    const err = await client.submit(imageGraph(), { idempotencyKey: key }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdempotencyKeyReuseError);
    expect((err as IdempotencyKeyReuseError).status).toBe(422);
    expect((err as IdempotencyKeyReuseError).code).toBe("idempotency_key_reuse");
  });

  it("wait polls to the terminal job; onProgress sees every change, ending with it", async () => {
    const client = new FlowgateClient({ baseUrl: server.url });
    const job = await client.submit(samplerGraph(6));
    const seen: Job[] = [];
    const done = await client.wait(job.id, { onProgress: (j) => seen.push(j), pollIntervalMs: 20 });
    expect(done.status).toBe("succeeded");
    expect(done.outputs).toHaveLength(1);
    expect(done.outputs[0]!.url).toMatch(/^http:\/\//);
    expect(seen.at(-1)!.status).toBe("succeeded");
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.every((j) => j.id === job.id)).toBe(true);
  });

  it("get reads the job by id, and list shows it among the caller's jobs", async () => {
    const client = new FlowgateClient({ baseUrl: server.url });
    const job = await client.submit(imageGraph());
    const read = await new FlowgateClient({ baseUrl: server.url }).get(job.id);
    expect(read.id).toBe(job.id);
    const done = await client.wait(job);
    const page = await client.list({ limit: 100 });
    const listed = page.jobs.find((j) => j.id === job.id);
    expect(listed?.status).toBe(done.status);
    const succeeded = await client.list({ status: "succeeded", limit: 100 });
    expect(succeeded.jobs.every((j) => j.status === "succeeded")).toBe(true);
  });

  it("cancel moves a running job to canceling, and wait then ends canceled", async () => {
    const client = new FlowgateClient({ baseUrl: server.url });
    const job = await client.submit(delayGraph(30));
    await waitFor(
      () => client.get(job.id),
      (j) => j.status === "running",
      "running",
    );
    const answer = await client.cancel(job.id);
    expect(answer.id).toBe(job.id);
    expect(["canceling", "canceled"]).toContain(answer.status);
    const end = await client.wait(job.id);
    expect(end.status).toBe("canceled");
  });

  it("a failed job comes back from wait with its error, not as a thrown HTTP error", async () => {
    const client = new FlowgateClient({ baseUrl: server.url });
    const end = await client.wait(await client.submit(failingGraph()));
    expect(end.status).toBe("failed");
    expect(end.error?.code).toBe("partner_node_error");
    expect(end.error?.node_id).toBe("1");
  });

  it("maps error answers to their classes, with details", async () => {
    const client = new FlowgateClient({ baseUrl: server.url });
    const invalid = await client.submit({ "1": { class_type: "NoSuchNode", inputs: {} } }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(InvalidWorkflowError);
    expect((invalid as InvalidWorkflowError).details?.node_errors).toHaveProperty("1");
    const ui = await client.submit({ nodes: [], links: [] }).catch((e: unknown) => e);
    expect(ui).toBeInstanceOf(WorkflowFormatUiError);
    const missing = await client.get(crypto.randomUUID()).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).status).toBe(404);
  });
});

describe("v2 client: credentials", () => {
  let locked: TestServer;
  beforeAll(async () => {
    locked = await startTestServer(["--token", "s3cret-token"]);
  });
  afterAll(async () => {
    await locked?.stop();
  });

  it("sends the token as a bearer; without it the server answers UnauthorizedError", async () => {
    const anonymous = await new FlowgateClient({ baseUrl: locked.url }).list().catch((e: unknown) => e);
    expect(anonymous).toBeInstanceOf(UnauthorizedError);
    const recorder = new FaultyFetch();
    const client = new FlowgateClient({ baseUrl: locked.url, token: "s3cret-token", fetch: recorder.fetch });
    const job = await client.submit(imageGraph());
    expect((await client.wait(job)).status).toBe("succeeded");
    expect(recorder.seen.every((r) => r.headers.authorization === "Bearer s3cret-token")).toBe(true);
  });
});
