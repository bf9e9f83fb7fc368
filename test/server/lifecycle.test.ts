// A job's life over HTTP: dispatch with a concurrency bound, queue positions, running,
// outputs committed as assets while running, progress, metrics, the end state, failures.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blake3Hex } from "../../src/blobs/index.ts";
import { delayGraph, expectValid, imageGraph, outputThenDelayGraph, startTestServer, unique, v, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ flags: ["--concurrency", "1"] });
});
afterAll(async () => {
  await s?.stop();
});

function expectMetrics(job: any): void {
  const created = Date.parse(job.created_at);
  if (job.started_at === null) expect(job.metrics.queue_ms).toBeNull();
  else expect(job.metrics.queue_ms).toBe(Date.parse(job.started_at) - created);
  if (job.completed_at === null || job.started_at === null) expect(job.metrics.execution_ms).toBeNull();
  else expect(job.metrics.execution_ms).toBe(Date.parse(job.completed_at) - Date.parse(job.started_at));
}

async function fetchBytes(url: string): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get("content-type"), bytes: Buffer.from(await res.arrayBuffer()) };
}

describe("queued -> running -> end, one at a time", () => {
  it("ST-3 JOB-4 JOB-5 JOB-6 JOB-7 OUT-1 OUT-3 OUT-4 OUT-5 GEN-4 a job runs, commits outputs while running, and others wait in order", async () => {
    const a = await s.api.submit(outputThenDelayGraph(30));
    const running = await s.api.waitJob(a.id, (j) => j.status === "running", "running");
    expect(running.started_at).not.toBeNull();
    expect(running.completed_at).toBeNull();
    expect(running.queue_position).toBeNull();
    expectMetrics(running);
    expect(running.metrics.queue_ms).toBeGreaterThanOrEqual(0);

    // Two more wait behind it, 0-based positions in submission order.
    const b = await s.api.submit(imageGraph("b"));
    const c = await s.api.submit(imageGraph("c"));
    expect(b.queue_position).toBe(0);
    expect(c.queue_position).toBe(1);
    for (const [id, pos] of [
      [b.id, 0],
      [c.id, 1],
    ] as const) {
      const j = await s.api.job(id);
      expect(j.status).toBe("queued");
      expect(j.queue_position).toBe(pos);
      expect(j.progress).toBeNull();
      expect(j.outputs).toEqual([]);
      expect(j.metrics).toEqual({ queue_ms: null, execution_ms: null });
    }

    // The early output is committed and visible before the job ends.
    const mid = await s.api.waitJob(a.id, (j) => j.outputs.length >= 1, "an output while running");
    expect(mid.status).toBe("running");
    const out = mid.outputs[0];
    expectValid(v.schema_Output, out, "output");
    expect(out).toMatchObject({ node_id: "2", type: "image", content_type: "image/png", job_id: a.id });
    expect(out.hash).toMatch(/^blake3:[0-9a-f]{64}$/);
    expect(Date.parse(out.url_expires_at)).toBeGreaterThan(Date.now());
    const asset = await s.api.get(`/api/v2/assets/${out.id}`);
    expect(asset.status).toBe(200);
    expectValid(v.response_getAsset_200, asset.body);
    expect(asset.body).toMatchObject({ id: out.id, hash: out.hash, size_bytes: out.size_bytes, content_type: out.content_type, job_id: a.id });
    const got = await fetchBytes(out.url);
    expect(got.status).toBe(200);
    expect(got.type).toBe(out.content_type);
    expect(got.bytes.length).toBe(out.size_bytes);
    expect(`blake3:${await blake3Hex(got.bytes)}`).toBe(out.hash);
    expect(got.bytes.subarray(1, 4).toString("latin1")).toBe("PNG");

    // Cancel the long one; the queue drains in order.
    await s.api.post(`/api/v2/jobs/${a.id}/cancel`);
    const doneB = await s.api.waitTerminal(b.id);
    const doneC = await s.api.waitTerminal(c.id);
    for (const done of [doneB, doneC]) {
      expect(done.status).toBe("succeeded");
      expect(done.error).toBeNull();
      expect(done.queue_position).toBeNull();
      expect(done.started_at).not.toBeNull();
      expect(done.completed_at).not.toBeNull();
      expect(Date.parse(done.completed_at)).toBeGreaterThanOrEqual(Date.parse(done.started_at));
      expectMetrics(done);
      expect(done.progress).toMatchObject({ value: 1, nodes_done: 2, nodes_total: 2 });
      expect(done.outputs).toHaveLength(1);
      expect(done).not.toHaveProperty("logs");
    }
    expect(Date.parse(doneC.started_at)).toBeGreaterThanOrEqual(Date.parse(doneB.started_at));
    const endA = await s.api.job(a.id);
    expect(endA.status).toBe("canceled");
    expect(endA.outputs).toHaveLength(1);
  });

  it("ST-4 a terminal job never changes: later reads return the same record", async () => {
    const job = await s.api.submit(imageGraph());
    const done = await s.api.waitTerminal(job.id);
    expect((await s.api.post(`/api/v2/jobs/${job.id}/cancel`)).body.status).toBe("succeeded");
    const again = await s.api.job(job.id);
    const strip = (j: any) => ({ ...j, outputs: j.outputs.map((o: any) => ({ ...o, url: undefined, url_expires_at: undefined })) });
    expect(strip(again)).toEqual(strip(done));
  });
});

describe("repeated reads of a finished job", () => {
  it("OUT-5 answer the same bytes within a link step, and fresh links once the step rolls over", async () => {
    const job = await s.api.submit(imageGraph("cached"));
    await s.api.waitTerminal(job.id);
    const pair = async () => [await s.api.get(`/api/v2/jobs/${job.id}`), await s.api.get(`/api/v2/jobs/${job.id}`)] as const;
    let [first, second] = await pair();
    // Two reads straddle a step boundary once a minute at most: then take the next pair.
    if (first.body.outputs[0].url_expires_at !== second.body.outputs[0].url_expires_at) [first, second] = await pair();
    expect(second.text).toBe(first.text);
    expect(second.headers.get("content-type")).toBe(first.headers.get("content-type"));
    expectValid(v.response_getJob_200, second.body);
    s.clock.advance(60_000);
    const later = await s.api.get(`/api/v2/jobs/${job.id}`);
    expect(later.body.outputs[0].url).not.toBe(first.body.outputs[0].url);
    expect(Date.parse(later.body.outputs[0].url_expires_at)).toBe(Date.parse(first.body.outputs[0].url_expires_at) + 60_000);
    expect((await fetch(later.body.outputs[0].url)).status).toBe(200);
  });
});

describe("concurrency", () => {
  it("--concurrency 2 runs two jobs at once and queues the third", async () => {
    const c2 = await startTestServer({ flags: ["--concurrency", "2"] });
    try {
      const jobs = [];
      for (let i = 0; i < 3; i++) jobs.push(await c2.api.submit(delayGraph(30)));
      await c2.api.waitJob(jobs[1].id, (j) => j.status === "running", "second running");
      await c2.api.waitJob(jobs[0].id, (j) => j.status === "running", "first running");
      const third = await c2.api.job(jobs[2].id);
      expect(third.status).toBe("queued");
      expect(third.queue_position).toBe(0);
      expect(c2.runtime.queue.running()).toBe(2);
      await c2.api.post(`/api/v2/jobs/${jobs[0].id}/cancel`);
      await c2.api.waitJob(jobs[2].id, (j) => j.status === "running", "third running");
    } finally {
      await c2.stop();
    }
  });
});

describe("outputs of every kind", () => {
  it("OUT-2 image, text, file, latent, audio and video outputs are all delivered and typed", async () => {
    const workflow = {
      "1": { class_type: "EmptyImage", inputs: { width: 16, height: 16, batch_size: 2, color: 255 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "kinds" } },
      "3": { class_type: "PrimitiveString", inputs: { value: unique("text") } },
      "4": { class_type: "PreviewAny", inputs: { source: ["3", 0] } },
      "5": { class_type: "FlowgateSaveFile", inputs: { text: "a,b\n1,2\n", filename_prefix: "kinds", extension: "csv" } },
      "6": { class_type: "EmptyLatentImage", inputs: { width: 16, height: 16, batch_size: 1 } },
      "7": { class_type: "SaveLatent", inputs: { samples: ["6", 0], filename_prefix: "kinds" } },
      "8": { class_type: "FlowgateTone", inputs: { seconds: 0.05, frequency: 440, sample_rate: 8000 } },
      "9": { class_type: "SaveAudio", inputs: { audio: ["8", 0], filename_prefix: "kinds" } },
      "10": { class_type: "FlowgateSaveVideo", inputs: { images: ["1", 0], filename_prefix: "kinds", fps: 4, quality: 50 } },
    };
    const job = await s.api.submit(workflow);
    const done = await s.api.waitTerminal(job.id);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    const types = new Set(done.outputs.map((o: any) => o.type));
    for (const t of ["image", "text", "file", "latent", "audio", "video"]) expect(types, t).toContain(t);
    expect(done.outputs.filter((o: any) => o.node_id === "2")).toHaveLength(2); // one per image of the batch
    for (const o of done.outputs) {
      expectValid(v.schema_Output, o);
      const got = await fetchBytes(o.url);
      expect(got.status).toBe(200);
      expect(got.bytes.length).toBe(o.size_bytes);
      expect(`blake3:${await blake3Hex(got.bytes)}`).toBe(o.hash);
    }
  });
});

describe("progress", () => {
  it("PRG-1 PRG-2 PRG-3 snapshots are complete, weighted by nodes and steps, and never go back", async () => {
    const workflow = {
      "1": { class_type: "FlowgateSampler", inputs: { seed: Math.floor(Math.random() * 1e9), steps: 10000, width: 32, height: 32 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "p" } },
    };
    const job = await s.api.submit(workflow);
    const seen: any[] = [];
    await s.api.waitJob(
      job.id,
      (j) => {
        if (j.progress) seen.push(j.progress);
        return new Set(seen.filter((p) => p.step).map((p) => p.step)).size >= 5;
      },
      "five sampler steps seen",
    );
    await s.api.post(`/api/v2/jobs/${job.id}/cancel`);
    const end = await s.api.waitTerminal(job.id);
    seen.push(end.progress);
    for (let i = 0; i < seen.length; i++) {
      const p = seen[i];
      expectValid(v.schema_Progress, p, "progress");
      expect(p.value).toBeGreaterThanOrEqual(0);
      expect(p.value).toBeLessThan(1);
      expect(p.nodes_total).toBe(2);
      if (i > 0) expect(p.value).toBeGreaterThanOrEqual(seen[i - 1].value);
      if (i > 0 && p.step !== null && seen[i - 1].step !== null) expect(p.step).toBeGreaterThanOrEqual(seen[i - 1].step);
      if (p.steps) {
        expect(p).toMatchObject({ current_node: "1", current_node_class: "FlowgateSampler", steps: 10000, nodes_done: 0 });
        expect(p.value).toBeCloseTo((p.nodes_done + p.step / p.steps) / p.nodes_total, 6);
      }
    }
  });

  it("PRG-1 a finished job's progress is complete: value 1, every node done", async () => {
    const done = await s.api.waitTerminal((await s.api.submit(imageGraph("done"))).id);
    expect(done.progress).toEqual({
      value: 1,
      nodes_done: 2,
      nodes_total: 2,
      current_node: null,
      current_node_class: null,
      step: null,
      steps: null,
      message: null,
    });
  });
});

describe("failures (JERR)", () => {
  it("JERR-1 JERR-2 a node failing at run time fails the job with error, not an HTTP error", async () => {
    const workflow = {
      "1": { class_type: "LoadImage", inputs: { image: `${unique("missing")}.png` } },
      "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
    };
    const res = await s.api.post("/api/v2/jobs", { workflow });
    expect(res.status).toBe(201);
    const done = await s.api.waitTerminal(res.body.id);
    expect(done.status).toBe("failed");
    expectValid(v.schema_JobError, done.error, "job error");
    expect(done.error).toMatchObject({ code: "invalid_input", node_id: "1", class_type: "LoadImage" });
    expect(typeof done.error.message).toBe("string");
    expect(JSON.stringify(done.error)).not.toMatch(/\/work\/|\/home\/|node_modules|\/src\//);
    expect(done.completed_at).not.toBeNull();
    expectMetrics(done);
  });

  it("JERR-1 a partner node without a configured vendor fails with partner_node_error", async () => {
    const workflow = {
      "1": { class_type: "FlowgatePartnerCall", inputs: { prompt: unique("p") } },
      "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
    };
    const job = await s.api.submit(workflow, { extra_data: { api_key_vendor_org: "sk-partner-missing-endpoint" } });
    const done = await s.api.waitTerminal(job.id);
    expect(done.status).toBe("failed");
    expect(done.error.code).toBe("partner_node_error");
    expect(JSON.stringify(done)).not.toContain("sk-partner-missing-endpoint");
  });
});

describe("listing and the workflow", () => {
  it("GET-1 an unknown job is 404 not_found", async () => {
    const res = await s.api.get("/api/v2/jobs/0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42");
    expect(res.status).toBe(404);
    expectValid(v.response_getJob_404, res.body);
    expect(res.body.error.code).toBe("not_found");
    for (const p of ["/workflow", "/events"]) {
      const r = await s.api.get(`/api/v2/jobs/0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42${p}`);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("not_found");
    }
    expect((await s.api.post("/api/v2/jobs/0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42/cancel")).status).toBe(404);
  });

  it("GEN-3 lists the caller's jobs newest first with cursor pagination and a status filter", async () => {
    const l = await startTestServer();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push((await l.api.submit(imageGraph(`l${i}`))).id);
      for (const id of ids) await l.api.waitTerminal(id);
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: any = await l.api.get(`/api/v2/jobs?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
        expect(res.status).toBe(200);
        expectValid(v.response_listJobs_200, res.body);
        expect(res.body.jobs.length).toBeLessThanOrEqual(3);
        for (const j of res.body.jobs) expect(j).not.toHaveProperty("logs");
        seen.push(...res.body.jobs.map((j: any) => j.id));
        cursor = res.body.next_cursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual([...ids].reverse());

      const def = await l.api.get("/api/v2/jobs");
      expect(def.body.jobs).toHaveLength(7);
      expect(def.body.next_cursor).toBeNull();

      const blocker = await l.api.submit(delayGraph(30));
      await l.api.waitJob(blocker.id, (j) => j.status === "running", "running");
      const running = await l.api.get("/api/v2/jobs?status=running");
      expectValid(v.response_listJobs_200, running.body);
      expect(running.body.jobs.map((j: any) => j.id)).toEqual([blocker.id]);
      expect((await l.api.get("/api/v2/jobs?status=succeeded&limit=100")).body.jobs).toHaveLength(7);

      for (const bad of ["limit=0", "limit=101", "limit=x", "status=done", "cursor=not-a-cursor"]) {
        const r = await l.api.get(`/api/v2/jobs?${bad}`);
        expect(r.status, bad).toBe(400);
        expectValid(v.response_listJobs_400, r.body);
        expect(r.body.error.code).toBe(bad.startsWith("cursor=") ? "invalid_cursor" : "invalid_request");
      }
    } finally {
      await l.stop();
    }
  });
});
