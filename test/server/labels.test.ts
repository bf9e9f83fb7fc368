// Job labels over HTTP (spec 2.1.0): bounds and their code, the round trip on every view,
// the listing filter and its code, and labels under the idempotency rule.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { delayGraph, expectError, expectValid, imageGraph, SseClient, startTestServer, unique, v, waitFor, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.stop();
});

const submit = (metadata?: unknown, headers: Record<string, string> = {}) =>
  s.api.post("/api/v2/jobs", metadata === undefined ? { workflow: imageGraph() } : { workflow: imageGraph(), metadata }, { headers });

describe("labels on submission", () => {
  it("are returned on POST, GET, cancel, list and the SSE status event; {} when none", async () => {
    const project = unique("p");
    const created = await submit({ project, "run.id": "7" });
    expect(created.status).toBe(201);
    expectValid(v.response_createJob_201, created.body);
    expect(created.body.metadata).toEqual({ project, "run.id": "7" });
    const id = created.body.id as string;
    const got = await s.api.get(`/api/v2/jobs/${id}`);
    expectValid(v.response_getJob_200, got.body);
    expect(got.body.metadata).toEqual({ project, "run.id": "7" });
    const sse = new SseClient(`${s.url}/api/v2/jobs/${id}/events`);
    await waitFor(
      () => sse.events.find((e) => e.event === "status"),
      (e) => e !== undefined,
      "a status event",
    );
    expect(sse.events.find((e) => e.event === "status")!.json.metadata).toEqual({ project, "run.id": "7" });
    sse.close();
    const canceled = await s.api.post(`/api/v2/jobs/${id}/cancel`, {});
    expect(canceled.body.metadata).toEqual({ project, "run.id": "7" });
    const listed = await s.api.get(`/api/v2/jobs?metadata[project]=${project}`);
    expectValid(v.response_listJobs_200, listed.body);
    expect(listed.body.jobs.map((j: any) => [j.id, j.metadata])).toEqual([[id, { project, "run.id": "7" }]]);

    const plain = await submit();
    expect(plain.body.metadata).toEqual({});
    expect((await s.api.get(`/api/v2/jobs/${plain.body.id}`)).body.metadata).toEqual({});
  });

  it("outside the bounds are 422 metadata_invalid with the offending key", async () => {
    const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, "v"]));
    expect((await submit(sixteen)).status).toBe(201);
    expect((await submit({ ["k".repeat(40)]: "v".repeat(256), "a-b_c.D9": "" })).status).toBe(201);
    const cases: Array<[unknown, string | null]> = [
      [{ ...sixteen, k16: "v" }, null],
      [{ "team name": "x" }, "team name"],
      [{ "": "x" }, ""],
      [{ ["k".repeat(41)]: "x" }, "k".repeat(41)],
      [{ ok: "v".repeat(257) }, "ok"],
      [{ n: 1 }, "n"],
      [{ nested: { a: "b" } }, "nested"],
      [["a"], null],
      ["text", null],
    ];
    for (const [metadata, key] of cases) {
      const res = await submit(metadata);
      expectError(res, 422, "metadata_invalid", v.response_createJob_422);
      expect(res.body.error.details.key, JSON.stringify(metadata)).toBe(key);
    }
    // Another problem in the body as well: the envelope's own code.
    const both = await s.api.post("/api/v2/jobs", { workflow: imageGraph(), metadata: { "bad key": "x" }, webhook_url: "http://x" });
    expectError(both, 400, "invalid_request");
  });

  it("take part in the idempotency rule: a reuse with other labels is 422 idempotency_key_reuse", async () => {
    const key = randomUUID();
    expect((await submit({ a: "1" }, { "idempotency-key": key })).status).toBe(201);
    expectError(await submit({ a: "2" }, { "idempotency-key": key }), 422, "idempotency_key_reuse");
    expectError(await submit({ a: "1" }, { "idempotency-key": key }), 422, "idempotency_key_reuse");
  });
});

describe("listing by label", () => {
  it("matches every filter, with status and cursor paging, newest first, only the caller's jobs", async () => {
    const project = unique("p");
    const ids: string[] = [];
    for (const run of ["1", "2", "1"]) {
      // The second waits long enough to be canceled whatever the other jobs do.
      const workflow = run === "2" ? delayGraph(30) : imageGraph();
      ids.push((await s.api.post("/api/v2/jobs", { workflow, metadata: { project, run } })).body.id);
    }
    await submit({ project: `${project}x`, run: "1" });
    const [a, b, c] = ids as [string, string, string];
    await s.api.post(`/api/v2/jobs/${b}/cancel`, {});
    await waitFor(
      async () => (await s.api.get(`/api/v2/jobs/${b}`)).body.status,
      (st) => st === "canceled",
      "the canceled job",
    );
    const list = async (q: string) => (await s.api.get(`/api/v2/jobs?${q}`)).body.jobs.map((j: any) => j.id);
    expect(await list(`metadata[project]=${project}`)).toEqual([c, b, a]);
    expect(await list(`metadata[project]=${project}&metadata[run]=1`)).toEqual([c, a]);
    expect(await list(`metadata[run]=1&metadata[project]=${project}&status=canceled`)).toEqual([]);
    expect(await list(`metadata[project]=${project}&status=canceled`)).toEqual([b]);
    const first = await s.api.get(`/api/v2/jobs?metadata[project]=${project}&limit=2`);
    expect(first.body.jobs.map((j: any) => j.id)).toEqual([c, b]);
    const second = await s.api.get(`/api/v2/jobs?metadata[project]=${project}&limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.jobs.map((j: any) => j.id)).toEqual([a]);
    expect(second.body.next_cursor).toBeNull();
    // URL-encoded brackets are the same filter.
    expect(await list(`metadata%5Bproject%5D=${project}`)).toEqual([c, b, a]);
  });

  it("a malformed filter is 400 invalid_metadata_filter", async () => {
    for (const q of [
      "metadata[]=x",
      "metadata[bad key]=x",
      "metadata[a][b]=x",
      "metadata[a]=1&metadata[a]=2",
      "metadata[a]=1&metadata[b]=2&metadata[c]=3&metadata[d]=4",
      `metadata[${"k".repeat(41)}]=x`,
      `metadata[a]=${"v".repeat(257)}`,
      "metadata=x",
    ]) {
      const res = await s.api.get(`/api/v2/jobs?${q}`);
      expectError(res, 400, "invalid_metadata_filter", v.response_listJobs_400);
    }
    expect((await s.api.get("/api/v2/jobs?metadata[a]=1&metadata[b]=2&metadata[c]=3")).status).toBe(200);
    expectError(await s.api.get("/api/v2/jobs?limit=0&metadata[a]=1"), 400, "invalid_request");
  });
});

describe("a server that declines labels (--labels off)", () => {
  let off: TestServer;
  beforeAll(async () => {
    off = await startTestServer({ flags: ["--labels", "off"] });
  });
  afterAll(async () => {
    await off?.stop();
  });

  it("answers labels and a label filter with 422 metadata_not_supported, and takes jobs without them", async () => {
    const labeled = await off.api.post("/api/v2/jobs", { workflow: imageGraph(), metadata: { project: "x" } });
    expectError(labeled, 422, "metadata_not_supported", v.response_createJob_422);
    const filtered = await off.api.get("/api/v2/jobs?metadata[project]=x");
    expectError(filtered, 422, "metadata_not_supported", v.response_listJobs_422);
    for (const body of [{ workflow: imageGraph() }, { workflow: imageGraph(), metadata: {} }]) {
      const res = await off.api.post("/api/v2/jobs", body);
      expect(res.status).toBe(201);
      expect(res.body.metadata).toEqual({});
    }
    expect((await off.api.get("/api/v2/jobs")).status).toBe(200);
    // The bounds still hold first: a bad map or filter keeps its own code.
    expectError(await off.api.post("/api/v2/jobs", { workflow: imageGraph(), metadata: { "bad key": "x" } }), 422, "metadata_invalid");
    expectError(await off.api.get("/api/v2/jobs?metadata[]=x"), 400, "invalid_metadata_filter");
  });

  it("rejects a --labels value other than on or off", () => {
    expect(() => loadConfig(["--labels", "maybe"], {})).toThrow(/--labels must be on or off/);
  });
});
