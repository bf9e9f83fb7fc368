// POST /api/v2/jobs over real HTTP: the 201 job, the request envelope (400), UI exports,
// graph validation, asset references and the bounded queue, each answer checked against the spec.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { delayGraph, expectError, expectValid, imageGraph, startTestServer, upload, v, waitFor, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.stop();
});

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe("a valid submission", () => {
  it("SUB-1 SUB-5 ST-2 JOB-1 JOB-2 answers 201 with the queued job, every field present, no logs", async () => {
    const res = await s.api.post("/api/v2/jobs", { workflow: imageGraph() });
    expect(res.status).toBe(201);
    expectValid(v.response_createJob_201, res.body);
    const job = res.body;
    expect(job.status).toBe("queued");
    expect(job).not.toHaveProperty("logs");
    for (const k of ["id", "status", "created_at", "started_at", "completed_at", "expires_at", "queue_position", "progress", "outputs", "error", "urls"]) {
      expect(job, k).toHaveProperty(k);
    }
    expect(job.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(job.created_at).toMatch(RFC3339_UTC);
    expect(job.expires_at).toMatch(RFC3339_UTC);
    expect(Date.parse(job.expires_at)).toBeGreaterThan(Date.parse(job.created_at));
    expect(job.started_at).toBeNull();
    expect(job.completed_at).toBeNull();
    expect(job.error).toBeNull();
    expect(job.metrics).toEqual({ queue_ms: null, execution_ms: null });
  });

  it("JOB-6 a job starts once its insert commits, while the answer waits for it to be durable, and is answered queued at position 0", async () => {
    const store = s.runtime.store;
    const create = store.createJob.bind(store);
    let release!: () => void;
    const durable = new Promise<void>((r) => (release = r));
    // The commit is reported as the store does; the resolution (the fsync) is held back.
    let submitted = "";
    store.createJob = async (job, options) => {
      submitted = job.id;
      const created = await create(job, options);
      await durable;
      return created;
    };
    // Other tests' jobs may still start meanwhile: only this submission's counts.
    const started: string[] = [];
    const stop = s.runtime.events.subscribeAll((e) => void (e.type === "status" && e.job.id === submitted && started.push(e.job.status)));
    try {
      let answered = false;
      const answer = s.api.post("/api/v2/jobs", { workflow: imageGraph("early") }).then((res) => {
        answered = true;
        return res;
      });
      await waitFor(
        () => started,
        (list) => list.includes("running"),
        "the job's start",
      );
      expect(answered).toBe(false);
      release();
      const res = await answer;
      expect(res.status).toBe(201);
      expectValid(v.response_createJob_201, res.body);
      expect(res.body.status).toBe("queued");
      expect(res.body.queue_position).toBe(0);
      expect(res.body.id).toBe(submitted);
      expect((await s.api.waitTerminal(res.body.id)).status).toBe("succeeded");
    } finally {
      stop();
      store.createJob = create;
    }
  });

  it("URL-1 URL-2 GEN-5 links are host-relative, carry the v2 prefix, and resolve against the request origin", async () => {
    const job = await s.api.submit(imageGraph());
    expect(job.urls).toEqual({
      self: `/api/v2/jobs/${job.id}`,
      events: `/api/v2/jobs/${job.id}/events`,
      cancel: `/api/v2/jobs/${job.id}/cancel`,
    });
    const followed = await s.api.get(new URL(job.urls.self, s.url).href);
    expect(followed.status).toBe(200);
    expect(followed.body.id).toBe(job.id);
  });

  it("GEN-1 SUB-1 the workflow is accepted verbatim: extra node keys and numeric link ids", async () => {
    const workflow = {
      "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 7 }, _meta: { title: "Empty" }, anything: [1, 2] },
      "2": { class_type: "SaveImage", inputs: { images: [1, 0], filename_prefix: "verbatim" } },
    };
    const job = await s.api.submit(workflow);
    const stored = await s.api.get(`/api/v2/jobs/${job.id}/workflow`);
    expect(stored.status).toBe(200);
    expectValid(v.response_getJobWorkflow_200, stored.body);
    expect(stored.body).toEqual({ format: "api", workflow });
  });

  it("SUB-2 accepts extra_data with api_key_vendor_org and never echoes it", async () => {
    const res = await s.api.post("/api/v2/jobs", { workflow: imageGraph(), extra_data: { api_key_vendor_org: "sk-submit-echo-check" } });
    expect(res.status).toBe(201);
    expectValid(v.response_createJob_201, res.body);
    expect(res.text).not.toContain("sk-submit-echo-check");
    expect(res.text).not.toContain("extra_data");
  });

  it("accepts a JSON content type with parameters", async () => {
    const res = await s.api.request("POST", "/api/v2/jobs", {
      body: JSON.stringify({ workflow: imageGraph() }),
      headers: { "content-type": "application/json; charset=utf-8" },
    });
    expect(res.status).toBe(201);
  });
});

describe("the request envelope (400 invalid_request)", () => {
  const cases: Array<[string, () => { body: string; type?: string }, string | null]> = [
    ["a body that is not JSON", () => ({ body: "{not json" }), ""],
    ["an empty body", () => ({ body: "" }), null],
    ["a JSON array", () => ({ body: "[]" }), null],
    ["a JSON string", () => ({ body: '"hello"' }), null],
    ["no workflow", () => ({ body: JSON.stringify({ extra_data: {} }) }), "workflow"],
    ["a workflow that is an array", () => ({ body: JSON.stringify({ workflow: [] }) }), "workflow"],
    ["a workflow that is a string", () => ({ body: JSON.stringify({ workflow: "x" }) }), "workflow"],
    ["a workflow that is null", () => ({ body: JSON.stringify({ workflow: null }) }), "workflow"],
    ["an unknown top-level field", () => ({ body: JSON.stringify({ workflow: imageGraph(), priority: 1 }) }), "priority"],
    ["the reserved webhook_url", () => ({ body: JSON.stringify({ workflow: imageGraph(), webhook_url: "https://example.com/h" }) }), "webhook_url"],
    ["the reserved inputs", () => ({ body: JSON.stringify({ workflow: imageGraph(), inputs: {} }) }), "inputs"],
    [
      "an extra_data key other than api_key_vendor_org",
      () => ({ body: JSON.stringify({ workflow: imageGraph(), extra_data: { other: "x" } }) }),
      "extra_data.other",
    ],
    [
      "a non-string api_key_vendor_org",
      () => ({ body: JSON.stringify({ workflow: imageGraph(), extra_data: { api_key_vendor_org: 42 } }) }),
      "extra_data.api_key_vendor_org",
    ],
    ["extra_data that is not an object", () => ({ body: JSON.stringify({ workflow: imageGraph(), extra_data: "key" }) }), "extra_data"],
    ["a content type that is not JSON", () => ({ body: JSON.stringify({ workflow: imageGraph() }), type: "text/plain" }), ""],
  ];

  it.each(cases)("SUB-2 SUB-3 ERR-1 rejects %s", async (_name, make, field) => {
    const before = (await s.api.get("/api/v2/jobs?limit=100")).body.jobs.length;
    const { body, type } = make();
    const res = await s.api.request("POST", "/api/v2/jobs", { body, headers: { "content-type": type ?? "application/json" } });
    expectError(res, 400, "invalid_request", v.response_createJob_400);
    const fields = res.body.error.details.fields as Array<{ field: string; reason: string }>;
    expect(Array.isArray(fields) && fields.length).toBeTruthy();
    for (const f of fields) expect(typeof f.field === "string" && typeof f.reason === "string").toBe(true);
    if (field !== null) expect(fields.map((f) => f.field)).toContain(field);
    if (field === "webhook_url" || field === "inputs") expect(fields.find((f) => f.field === field)?.reason).toBe("reserved");
    // Nothing was created.
    expect((await s.api.get("/api/v2/jobs?limit=100")).body.jobs.length).toBe(before);
  });

  it("lists every offending field at once", async () => {
    const res = await s.api.post("/api/v2/jobs", { workflow: imageGraph(), webhook_url: "x", inputs: {}, colour: 1, extra_data: { a: 1 } });
    expectError(res, 400, "invalid_request", v.response_createJob_400);
    const fields = res.body.error.details.fields.map((f: { field: string }) => f.field).sort();
    expect(fields).toEqual(["colour", "extra_data.a", "inputs", "webhook_url"]);
  });

  it("an Idempotency-Key longer than 255 characters is 400", async () => {
    const res = await s.api.post("/api/v2/jobs", { workflow: imageGraph() }, { headers: { "idempotency-key": "k".repeat(300) } });
    expectError(res, 400, "invalid_request", v.response_createJob_400);
  });
});

describe("UI exports and graph validation (422)", () => {
  it("GEN-2 a UI export is 422 workflow_format_ui, checked before the graph", async () => {
    const ui = { last_node_id: 2, nodes: [{ id: 1, type: "EmptyImage" }], links: [], version: 0.4 };
    const res = await s.api.post("/api/v2/jobs", { workflow: ui });
    expectError(res, 422, "workflow_format_ui", v.response_createJob_422);
  });

  it("SUB-4 SUB-6 reports every graph error at once, per node, with stable reasons", async () => {
    const workflow = {
      "1": { class_type: "NoSuchNode", inputs: {} },
      "2": { class_type: "SaveImage", inputs: { images: ["99", 0], filename_prefix: "x" } },
      "3": { class_type: "EmptyImage", inputs: { width: 0, height: 8, batch_size: 1, color: 0 } },
      "4": { class_type: "SaveImage", inputs: { images: ["3", 0] } },
      "5": { class_type: "PrimitiveString", inputs: { value: "a" } },
      "6": { class_type: "SaveImage", inputs: { images: ["5", 0], filename_prefix: "x" } },
      "7": { class_type: "ImageInvert", inputs: { image: ["8", 0] } },
      "8": { class_type: "ImageInvert", inputs: { image: ["7", 0] } },
      "9": { class_type: "PreviewImage", inputs: { images: ["8", 0] } },
      "10": "not a node",
    };
    const res = await s.api.post("/api/v2/jobs", { workflow });
    expectError(res, 422, "invalid_workflow", v.response_createJob_422);
    const errors = res.body.error.details.node_errors as Record<string, Array<{ field: string; reason: string }>>;
    const reasons = (id: string) => (errors[id] ?? []).map((e) => `${e.field}:${e.reason}`);
    expect(reasons("1")).toContain("class_type:unknown_class");
    expect(reasons("2")).toContain("images:bad_link");
    expect(reasons("3")).toContain("width:out_of_range");
    expect(reasons("4")).toContain("filename_prefix:missing_input");
    expect(reasons("6")).toContain("images:type_mismatch");
    expect(
      reasons("7")
        .concat(reasons("8"))
        .some((r) => r.endsWith(":cycle")),
    ).toBe(true);
    expect(reasons("10")).toContain("class_type:bad_node");
  });

  it("SUB-6 a filename_prefix that leaves the output folder is refused at submission, per node, on both interfaces", async () => {
    const graph = (prefix: string) => ({
      "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: prefix } },
    });
    for (const prefix of ["../x", "a/../../x", "/etc/x", "\\\\server\\share\\x", "\\x", "a\u0000b", "a\nb"]) {
      const res = await s.api.post("/api/v2/jobs", { workflow: graph(prefix) });
      expectError(res, 422, "invalid_workflow", v.response_createJob_422);
      expect(res.body.error.details.node_errors, JSON.stringify(prefix)).toEqual({
        "2": [expect.objectContaining({ field: "filename_prefix", reason: "out_of_range" })],
      });
      const hosted = await fetch(`${s.url}/api/prompt`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: graph(prefix) }),
      });
      expect(hosted.status, JSON.stringify(prefix)).toBe(400);
      expect(((await hosted.json()) as any).node_errors["2"].errors[0].extra_info.input_name).toBe("filename_prefix");
    }
    // Subfolders, and `..` that stays inside, are still fine.
    for (const prefix of ["sub/dir/x", "a/../b", "./x"]) {
      const res = await s.api.post("/api/v2/jobs", { workflow: graph(prefix) });
      expect(res.status, `${prefix}: ${res.text}`).toBe(201);
    }
  });

  it("SUB-6 a graph with no output node is invalid (graph-wide error under the empty key)", async () => {
    const res = await s.api.post("/api/v2/jobs", { workflow: { "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } } } });
    expectError(res, 422, "invalid_workflow", v.response_createJob_422);
    expect(res.body.error.details.node_errors[""]).toEqual([expect.objectContaining({ reason: "no_output_node" })]);
  });

  it('SUB-6 each node error says what is wrong in words, with "did you mean", on both interfaces', async () => {
    const workflow = {
      "1": { class_type: "EmptyImag", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
      "2": { class_type: "LoadImage", inputs: { image: "" } },
      "3": { class_type: "PreviewImage", inputs: { images: ["2", 0] } },
      "4": { class_type: "SaveImage", inputs: { image: ["2", 0], filename_prefix: "x" } },
    };
    const res = await s.api.post("/api/v2/jobs", { workflow });
    expectError(res, 422, "invalid_workflow", v.response_createJob_422);
    const errors = res.body.error.details.node_errors;
    expect(errors["1"]).toEqual([
      { field: "class_type", reason: "unknown_class", message: 'This server has no node class "EmptyImag". Did you mean "EmptyImage"?' },
    ]);
    expect(errors["2"][0].message).toMatch(/No image was chosen\. Upload one \(POST \/api\/v2\/assets/);
    expect(errors["4"][0]).toMatchObject({
      field: "images",
      reason: "missing_input",
      message: 'SaveImage needs the input "images". It was given "image": did you mean "images"?',
    });
    // The hosted interface keeps ComfyUI's items and adds the hint beside their own fields.
    const hosted = await s.api.post("/api/prompt", { prompt: workflow });
    expect(hosted.status).toBe(400);
    expect(hosted.body.node_errors["1"].errors[0]).toMatchObject({ type: "missing_node_type", extra_info: { hint: 'Did you mean "EmptyImage"?' } });
    expect(hosted.body.node_errors["4"].errors[0]).toMatchObject({
      type: "required_input_missing",
      details: "images",
      extra_info: { input_name: "images", hint: 'It was given "image": did you mean "images"?' },
    });
  });

  it("SUB-6 an empty workflow is invalid_workflow, not a server error", async () => {
    const res = await s.api.post("/api/v2/jobs", { workflow: {} });
    expectError(res, 422, "invalid_workflow", v.response_createJob_422);
  });
});

describe("asset references (422 missing_asset)", () => {
  const loadGraph = (image: unknown) => ({
    "1": { class_type: "LoadImage", inputs: { image } },
    "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
  });

  it("SUB-7 AST-2 a reference to an asset that does not exist", async () => {
    const id = "0192f4a8-7000-7a00-8000-0000000000aa";
    const res = await s.api.post("/api/v2/jobs", { workflow: loadGraph({ __type: "core/ASSET", info: { id } }) });
    expectError(res, 422, "missing_asset", v.response_createJob_422);
    expect(res.body.error.details.assets).toEqual([{ node_id: "1", field: "image", asset_id: id }]);
  });

  it("SUB-7 a malformed reference", async () => {
    const res = await s.api.post("/api/v2/jobs", { workflow: loadGraph({ __type: "core/ASSET", info: { id: "not-a-uuid" } }) });
    expectError(res, 422, "missing_asset", v.response_createJob_422);
  });

  it("SUB-7 a reference to a deleted upload", async () => {
    const up = await upload(s.api, [{ name: "file", file: new Uint8Array([1, 2, 3, 4, 5]), filename: "x.bin" }]);
    expect(up.status).toBe(201);
    expect((await s.api.request("DELETE", `/api/v2/assets/${up.body.id}`)).status).toBe(204);
    const res = await s.api.post("/api/v2/jobs", { workflow: loadGraph({ __type: "core/ASSET", info: { id: up.body.id } }) });
    expectError(res, 422, "missing_asset", v.response_createJob_422);
  });
});

describe("the bounded queue (429 queue_full)", () => {
  it("SUB-8 ERR-3 at the bound the answer is 429 queue_full with an integer Retry-After, and nothing is created", async () => {
    const q = await startTestServer({ flags: ["--concurrency", "1", "--queue-limit", "2"] });
    try {
      const running = await q.api.submit(delayGraph(30));
      await q.api.waitJob(running.id, (j) => j.status === "running", "running");
      // A start is visible before it is durable; until then the job still holds its queue place.
      await waitFor(
        () => q.runtime.dispatcher.waiting,
        (n) => n === 0,
        "the start to be durable",
      );
      const a = await q.api.submit(delayGraph(30));
      const b = await q.api.submit(delayGraph(30));
      expect([a.queue_position, b.queue_position]).toEqual([0, 1]);
      const res = await q.api.post("/api/v2/jobs", { workflow: delayGraph(30) });
      expectError(res, 429, "queue_full", v.response_createJob_429);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      const list = await q.api.get("/api/v2/jobs?limit=100");
      expect(list.body.jobs).toHaveLength(3);
      // A slot frees: the next submission is accepted.
      expect((await q.api.post(`/api/v2/jobs/${b.id}/cancel`)).body.status).toBe("canceled");
      await q.api.submit(delayGraph(30));
    } finally {
      await q.stop();
    }
  });

  it("SUB-8 concurrent submissions never push the queue past its bound", async () => {
    const q = await startTestServer({ flags: ["--concurrency", "1", "--queue-limit", "3"] });
    try {
      const running = await q.api.submit(delayGraph(30));
      await q.api.waitJob(running.id, (j) => j.status === "running", "running");
      // A start is visible before it is durable; until then the job still holds its queue place.
      await waitFor(
        () => q.runtime.dispatcher.waiting,
        (n) => n === 0,
        "the start to be durable",
      );
      const results = await Promise.all(Array.from({ length: 20 }, () => q.api.post("/api/v2/jobs", { workflow: delayGraph(30) })));
      const created = results.filter((r) => r.status === 201);
      const refused = results.filter((r) => r.status === 429);
      expect(created.length + refused.length).toBe(20);
      for (const r of refused) expectError(r, 429, "queue_full", v.response_createJob_429);
      expect(created).toHaveLength(3);
      expect(q.runtime.dispatcher.waiting).toBe(3);
    } finally {
      await q.stop();
    }
  });
});
