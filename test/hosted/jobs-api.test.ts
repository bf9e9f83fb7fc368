// ComfyUI's current job API on the hosted interface (GET /api/jobs, GET /api/jobs/{id}, the two
// cancels, GET /api/features) and the client's prompt_id on POST /api/prompt, tried as a ComfyUI
// user would: queue, list, filter, page, fetch, cancel, restart the server, list again.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Gates } from "../fixtures/gate-node.ts";
import { startTestServer, until, type TestServer } from "./hosted-server.ts";

const KEY = "test-key-0123456789";
const auth = { "x-api-key": KEY };
const gates = new Gates();
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer(["--token", KEY, "--concurrency", "1"], { extraNodes: [gates.node] });
});
afterAll(async () => {
  await server?.stop();
});

interface Job {
  id: string;
  status: string;
  priority: number;
  create_time: number;
  execution_start_time?: number;
  execution_end_time?: number;
  outputs_count: number;
  previewable_outputs_count: number;
  preview_output?: Record<string, unknown>;
  workflow?: { prompt: Record<string, unknown>; extra_data: Record<string, unknown> };
  outputs?: Record<string, unknown>;
  execution_status?: { status_str: string; completed: boolean };
}
interface JobList {
  jobs: Job[];
  pagination: { offset: number; limit: number | null; total: number; has_more: boolean };
}

let n = 0;
const text = () => ({ "1": { class_type: "PrimitiveString", inputs: { value: `j${n++}` } }, "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } });
const image = () => ({
  "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: n++ } },
  "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "jobs" } },
});
/** A graph that runs until the test opens gate `gate`. */
const held = (gate: string) => ({
  "1": { class_type: "PrimitiveString", inputs: { value: `g${n++}` } },
  "2": { class_type: "TestGate", inputs: { value: ["1", 0], gate } },
  "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
});

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(body) });
const get = (path: string) => fetch(`${server.url}${path}`, { headers: auth });

async function queue(prompt: Record<string, unknown>, promptId?: string | null): Promise<{ prompt_id: string; number: number }> {
  const res = await post("/api/prompt", promptId === undefined ? { prompt } : { prompt, prompt_id: promptId });
  expect(res.status).toBe(200);
  return (await res.json()) as { prompt_id: string; number: number };
}
async function list(query = ""): Promise<JobList> {
  const res = await get(`/api/jobs${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as JobList;
}
async function job(id: string): Promise<Job> {
  const res = await get(`/api/jobs/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Job;
}
const statusOf = async (id: string) => (await job(id)).status;
const reaches = (id: string, status: string) => until(async () => ((await statusOf(id)) === status ? true : undefined));

describe("prompt_id on POST /api/prompt", () => {
  it("honours a client's canonical UUID: the prompt id is the job id everywhere", async () => {
    const id = randomUUID();
    const { prompt_id } = await queue(text(), id);
    expect(prompt_id).toBe(id);
    await reaches(id, "completed");
    expect((await (await get(`/api/job/${id}/status`)).json()) as { status: string }).toEqual({ status: "success" });
    const v2 = await fetch(`${server.url}/api/v2/jobs/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(v2.status).toBe(200);
    expect(((await v2.json()) as { id: string }).id).toBe(id);
  });

  it("refuses an id that is not a canonical lowercase UUID with ComfyUI's invalid_prompt_id, and queues nothing", async () => {
    const before = (await list()).pagination.total;
    for (const bad of [randomUUID().toUpperCase(), "not-a-uuid", `{${randomUUID()}}`, ""]) {
      const res = await post("/api/prompt", { prompt: text(), prompt_id: bad });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { type: string; message: string }; node_errors: unknown };
      expect(body.error.type).toBe("invalid_prompt_id");
      expect(body.node_errors).toEqual({});
    }
    expect((await list()).pagination.total).toBe(before);
  });

  it("assigns an id when prompt_id is null or absent", async () => {
    const a = await queue(text(), null);
    const b = await queue(text());
    expect(a.prompt_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.prompt_id).not.toBe(a.prompt_id);
  });

  it("answers a prompt_id already used with the existing prompt and never runs it again", async () => {
    const id = randomUUID();
    const first = await queue(text(), id);
    await reaches(id, "completed");
    const total = (await list()).pagination.total;
    // The same id again, even with another graph: the same prompt, no second run.
    const again = await queue(image(), id);
    expect(again).toEqual({ prompt_id: id, number: first.number, node_errors: {} });
    const concurrent = await Promise.all([queue(image(), id), queue(image(), id)]);
    expect(concurrent.map((r) => r.prompt_id)).toEqual([id, id]);
    expect((await list()).pagination.total).toBe(total);
    expect((await job(id)).outputs_count).toBe(0); // still the text graph's run, no image saved
  });

  it("keeps one run for concurrent first submissions of one id", async () => {
    const id = randomUUID();
    const total = (await list()).pagination.total;
    const answers = await Promise.all([queue(text(), id), queue(text(), id), queue(text(), id)]);
    expect(new Set(answers.map((a) => `${a.prompt_id}/${a.number}`)).size).toBe(1);
    await reaches(id, "completed");
    expect((await list()).pagination.total).toBe(total + 1);
  });
});

describe("GET /api/jobs", () => {
  it("lists, filters by status, sorts and pages in ComfyUI's shape", async () => {
    const done = [await queue(image()), await queue(text())].map((r) => r.prompt_id);
    for (const id of done) await reaches(id, "completed");
    const running = (await queue(held("list-running"))).prompt_id;
    await reaches(running, "in_progress");
    const pending = (await queue(text())).prompt_id;

    const all = await list();
    expect(all.pagination).toEqual({ offset: 0, limit: null, total: all.jobs.length, has_more: false });
    // Newest first by default.
    expect(all.jobs.map((j) => j.priority)).toEqual([...all.jobs.map((j) => j.priority)].sort((a, b) => b - a));
    expect(all.jobs[0]!.id).toBe(pending);
    const byId = new Map(all.jobs.map((j) => [j.id, j]));
    expect(byId.get(pending)).toMatchObject({ status: "pending", outputs_count: 0, previewable_outputs_count: 0 });
    expect(byId.get(pending)!.execution_start_time).toBeUndefined();
    expect(byId.get(running)).toMatchObject({ status: "in_progress" });
    expect(typeof byId.get(running)!.execution_start_time).toBe("number");
    const saved = byId.get(done[0]!)!;
    expect(saved).toMatchObject({ status: "completed", outputs_count: 1, previewable_outputs_count: 1 });
    expect(saved.preview_output).toMatchObject({ type: "output", nodeId: "2", mediaType: "images" });
    expect(saved.execution_end_time! >= saved.execution_start_time!).toBe(true);
    expect(saved.workflow).toBeUndefined(); // the list carries summaries only

    expect((await list("?status=pending")).jobs.map((j) => j.id)).toEqual([pending]);
    expect((await list("?status=in_progress,pending")).jobs.map((j) => j.id)).toEqual([pending, running]);
    expect((await list("?status=COMPLETED")).jobs.every((j) => j.status === "completed")).toBe(true);
    const asc = await list("?sort_order=asc&status=completed");
    expect(asc.jobs.map((j) => j.create_time)).toEqual([...asc.jobs.map((j) => j.create_time)].sort((a, b) => a - b));
    const byDuration = await list("?sort_by=execution_time&status=completed");
    const durations = byDuration.jobs.map((j) => j.execution_end_time! - j.execution_start_time!);
    expect(durations).toEqual([...durations].sort((a, b) => b - a));

    // Pages of two cover the list exactly once.
    const seen: string[] = [];
    for (let offset = 0; ; offset += 2) {
      const page = await list(`?limit=2&offset=${offset}`);
      expect(page.pagination).toMatchObject({ offset, limit: 2, total: all.pagination.total });
      seen.push(...page.jobs.map((j) => j.id));
      if (!page.pagination.has_more) break;
    }
    expect(seen).toEqual(all.jobs.map((j) => j.id));
    expect((await list("?offset=-5&limit=1")).pagination).toMatchObject({ offset: 0, has_more: true });
    expect((await list(`?offset=${all.pagination.total + 3}`)).jobs).toEqual([]);
    // No job here was queued with a ComfyUI workflow id.
    expect((await list("?workflow_id=abc")).pagination.total).toBe(0);
    // The bare route as ComfyUI serves it.
    expect((await (await get("/jobs?limit=1")).json()) as JobList).toMatchObject({ pagination: { limit: 1 } });

    gates.open("list-running");
    await reaches(pending, "completed");
  });

  it("keeps the workflow id a ComfyUI frontend sends, and filters by it", async () => {
    const workflow = randomUUID();
    const withId = async (id: unknown) => {
      const res = await post("/api/prompt", { prompt: text(), extra_data: { extra_pnginfo: { workflow: { id, nodes: [] } }, api_key_vendor_org: "k-secret" } });
      expect(res.status).toBe(200);
      return ((await res.json()) as { prompt_id: string }).prompt_id;
    };
    const mine = [await withId(workflow), await withId(workflow)];
    const other = await withId(randomUUID());
    const unkept = [await withId(7), await withId("x".repeat(257))];
    for (const id of [...mine, other, ...unkept]) await reaches(id, "completed");

    const filtered = await list(`?workflow_id=${workflow}`);
    expect(filtered.jobs.map((j) => j.id)).toEqual([...mine].reverse());
    expect(filtered.pagination).toEqual({ offset: 0, limit: null, total: 2, has_more: false });
    expect(filtered.jobs.every((j) => (j as Job & { workflow_id?: string }).workflow_id === workflow)).toBe(true);
    expect((await list(`?workflow_id=${workflow}&limit=1&offset=1`)).jobs.map((j) => j.id)).toEqual([mine[0]]);
    // An id that is not a string, or longer than a filter can ask for, is not kept: the item has none.
    const byId = new Map((await list()).jobs.map((j) => [j.id, j as Job & { workflow_id?: string }]));
    expect(byId.get(unkept[0]!)!.workflow_id).toBeUndefined();
    expect(byId.get(unkept[1]!)!.workflow_id).toBeUndefined();
    expect(((await job(mine[0]!)) as Job & { workflow_id?: string }).workflow_id).toBe(workflow);
  });

  it("answers bad values with ComfyUI's 400 {error}", async () => {
    for (const query of ["status=done", "status=pending,nope", "sort_by=name", "sort_order=up", "limit=0", "limit=-1", "limit=x", "limit=1.5", "offset=x"]) {
      const res = await get(`/api/jobs?${query}`);
      expect(res.status, query).toBe(400);
      const body = (await res.json()) as { error: unknown };
      expect(typeof body.error, query).toBe("string");
    }
  });
});

describe("GET /api/jobs/{id}", () => {
  it("returns the full job: graph, extra_data without secrets, outputs and status once finished", async () => {
    const prompt = image();
    const res = await post("/api/prompt", { prompt, extra_data: { api_key_vendor_org: "secret-partner-key" } });
    const { prompt_id: id } = (await res.json()) as { prompt_id: string };
    await reaches(id, "completed");
    const full = await job(id);
    expect(full.workflow).toEqual({ prompt, extra_data: { create_time: full.create_time } });
    expect(JSON.stringify(full)).not.toContain("secret-partner-key");
    expect(full.execution_status).toMatchObject({ status_str: "success", completed: true });
    expect(Object.keys(full.outputs ?? {})).toEqual(["2"]);
  });

  it("is ComfyUI's 404 for an unknown or malformed id, and for a prompt taken out of the history", async () => {
    for (const id of [randomUUID(), "nope"]) {
      const res = await get(`/api/jobs/${id}`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: "Job not found" });
    }
    const { prompt_id: id } = await queue(text());
    await reaches(id, "completed");
    expect((await post("/api/history", { delete: [id] })).status).toBe(200);
    expect((await get(`/api/jobs/${id}`)).status).toBe(404);
    expect((await list()).jobs.map((j) => j.id)).not.toContain(id);
  });
});

describe("cancel", () => {
  it("stops a pending and a running job, and is a no-op for finished and unknown ids", async () => {
    const running = (await queue(held("cancel-running"))).prompt_id;
    await reaches(running, "in_progress");
    const pending = (await queue(text())).prompt_id;
    const cancel = async (id: string) => ((await (await post(`/api/jobs/${id}/cancel`, {})).json()) as { cancelled: boolean }).cancelled;
    expect(await cancel(pending)).toBe(true);
    expect(await statusOf(pending)).toBe("cancelled");
    expect(await cancel(pending)).toBe(false);
    expect(await cancel(running)).toBe(true);
    await reaches(running, "cancelled");
    expect(await cancel(randomUUID())).toBe(false);
    // As ComfyUI: an id no job can have is a no-op too (only the batch refuses malformed ids).
    for (const id of ["not-a-uuid", randomUUID().toUpperCase(), "%00"]) {
      const res = await post(`/api/jobs/${id}/cancel`, {});
      expect(res.status, id).toBe(200);
      expect(await res.json()).toEqual({ cancelled: false });
    }
  });

  it("cancels a batch; a malformed id refuses the whole batch with invalid_ids", async () => {
    const running = (await queue(held("batch-running"))).prompt_id;
    await reaches(running, "in_progress");
    const pending = (await queue(text())).prompt_id;
    const refused = await post("/api/jobs/cancel", { job_ids: [pending, "bad", 7] });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: "job_ids contains invalid id(s)", invalid_ids: ["bad", "7"] });
    expect(await statusOf(pending)).toBe("pending");
    const res = await post("/api/jobs/cancel", { job_ids: [pending, running, randomUUID()] });
    expect(await res.json()).toEqual({ cancelled: true });
    await reaches(running, "cancelled");
    expect(await statusOf(pending)).toBe("cancelled");
    expect(await (await post("/api/jobs/cancel", { job_ids: [pending] })).json()).toEqual({ cancelled: false });
  });
});

describe("GET /api/features", () => {
  it("answers the server's flags", async () => {
    const res = await get("/api/features");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ supports_preview_metadata: true, max_upload_size: expect.any(Number) });
  });
});

describe("GET /api/view", () => {
  async function upload(name: string, type: string, bytes: string): Promise<string> {
    const form = new FormData();
    form.set("image", new Blob([bytes], { type }), name);
    form.set("type", "input");
    const res = await fetch(`${server.url}/api/upload/image`, { method: "POST", headers: auth, body: form });
    expect(res.status).toBe(200);
    return ((await res.json()) as { name: string }).name;
  }
  async function viewed(name: string): Promise<Response> {
    const redirect = await fetch(`${server.url}/api/view?filename=${encodeURIComponent(name)}&type=input`, { headers: auth, redirect: "manual" });
    expect(redirect.status).toBe(302);
    return fetch(new URL(redirect.headers.get("location")!, server.url));
  }

  it("serves files with nosniff, and HTML and SVG as attachments", async () => {
    const png = await viewed(await upload("x.png", "image/png", "not really a png"));
    expect(png.headers.get("x-content-type-options")).toBe("nosniff");
    expect(png.headers.get("content-disposition")).toBeNull();
    // Outputs are typed by their names (a ComfyUI node's .svg or .html file): record two as an engine would.
    const { owner } = await server.runtime.surface.hostedCaller(KEY);
    for (const [name, type] of [
      ["page.svg", "image/svg+xml"],
      ["page.html", "text/html"],
    ] as const) {
      const stored = await server.runtime.assets.storeUpload(new TextEncoder().encode(`<svg><script>alert("${name}")</script></svg>`), name);
      await server.runtime.assets.recordNamed(owner, { ...stored, contentType: type }, name, "input");
      const res = await viewed(name);
      expect(res.headers.get("content-type")).toContain(type);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${name}"; filename*=UTF-8''${name}`);
    }
  });
});

describe("across a restart", () => {
  it("lists the same jobs, and a prompt_id resubmitted after the restart finds its prompt (one run)", async () => {
    const id = randomUUID();
    const first = await queue(text(), id);
    await reaches(id, "completed");
    const before = await list();
    server = await server.restart();
    const after = await list();
    expect(after).toEqual(before);
    expect(await queue(text(), id)).toEqual(first);
    expect((await list()).pagination.total).toBe(before.pagination.total);
  });
});
