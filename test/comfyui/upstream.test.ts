// flowgate in comfyui mode in front of a ComfyUI-protocol server started as a separate process
// (a second flowgate with the embedded engine, serving ComfyUI's native routes): the v2
// contract and the hosted interface end to end, cancels, the partner key, several instances,
// and an upstream that goes away or restarts.
import { rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JobEvent } from "../../src/jobs/event-bus.ts";
import { ComfyClient } from "../hosted/comfy-client.ts";
import { filesContaining } from "../server/helpers.ts";
import { reasons } from "../node-errors.ts";
import { call, startFront, startUpstream, TERMINAL, until, waitJob, type Front, type Upstream } from "./helpers.ts";

const KEY = "vendor-key-7f3a9c1e5b";

async function png(r: number, g: number, b: number): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 3, background: { r, g, b } } })
    .png()
    .toBuffer();
}

async function uploadAsset(base: string, bytes: Buffer, name: string): Promise<{ id: string }> {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(bytes)], { type: "image/png" }), name);
  const res = await fetch(`${base}/api/v2/assets`, { method: "POST", body: form });
  expect(res.status).toBeLessThan(300);
  return (await res.json()) as { id: string };
}

async function submit(base: string, workflow: Record<string, unknown>, extra?: Record<string, unknown>): Promise<any> {
  const res = await call("POST", `${base}/api/v2/jobs`, { workflow, ...(extra ? { extra_data: extra } : {}) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const delayGraph = (seconds: number) => ({
  "1": { class_type: "PrimitiveString", inputs: { value: `hold-${Math.random()}` } },
  "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds } },
  "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
});

describe("comfyui mode over a ComfyUI-protocol upstream", () => {
  let upstream: Upstream;
  let front: Front;
  let vendor: http.Server;
  const vendorAuth: string[] = [];
  const events: JobEvent[] = [];

  beforeAll(async () => {
    vendor = http.createServer((req, res) => {
      vendorAuth.push(String(req.headers.authorization));
      req.resume();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: "partner says hi" }));
    });
    await new Promise<void>((r) => vendor.listen(0, "127.0.0.1", r));
    const vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
    upstream = await startUpstream({ flags: ["--concurrency", "1", "--partner-url", vendorUrl] });
    front = await startFront([upstream.url], ["--concurrency", "4"]);
    front.runtime.events.subscribeAll((e) => void events.push(e));
  });
  afterAll(async () => {
    await front?.stop();
    await upstream?.stop();
    await new Promise<void>((r) => vendor.close(() => r()));
  });

  it("runs a v2 job: an asset input uploaded to ComfyUI, progress, previews, and every output kind committed", async () => {
    const asset = await uploadAsset(front.url, await png(255, 0, 0), "red.png");
    const job = await submit(front.url, {
      "1": { class_type: "LoadImage", inputs: { image: { __type: "core/ASSET", info: { id: asset.id } } } },
      "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "inverted" } },
      "4": { class_type: "FlowgateSampler", inputs: { seed: 5, steps: 3, width: 16, height: 16 } },
      "5": { class_type: "PreviewImage", inputs: { images: ["4", 0] } },
      "6": { class_type: "PreviewAny", inputs: { source: "some text" } },
      "7": { class_type: "FlowgateTone", inputs: { seconds: 0.05, frequency: 440, sample_rate: 8000 } },
      "8": { class_type: "SaveAudio", inputs: { audio: ["7", 0], filename_prefix: "audio/tone" } },
      "9": { class_type: "EmptyLatentImage", inputs: { width: 16, height: 16, batch_size: 1 } },
      "10": { class_type: "SaveLatent", inputs: { samples: ["9", 0], filename_prefix: "latents/l" } },
      "11": { class_type: "FlowgateSaveVideo", inputs: { images: ["4", 0], filename_prefix: "video/v", fps: 8, quality: 80 } },
      "12": { class_type: "FlowgateSaveFile", inputs: { text: "a,b", filename_prefix: "table", extension: "csv" } },
    });
    const done = await waitJob(front.url, job.id, (j) => TERMINAL.includes(j.status), "the job to end");
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    const byNode = Object.fromEntries(done.outputs.map((o: any) => [o.node_id, o]));
    expect(Object.fromEntries(Object.entries(byNode).map(([k, o]: [string, any]) => [k, [o.type, o.content_type.split(";")[0]]]))).toEqual({
      "3": ["image", "image/png"],
      "5": ["image", "image/png"],
      "6": ["text", "text/plain"],
      "8": ["audio", "audio/flac"],
      "10": ["latent", "application/octet-stream"],
      "11": ["video", "video/webm"],
      "12": ["file", "text/csv"],
    });
    // The red input was uploaded to ComfyUI and inverted there: cyan.
    const bytes = Buffer.from(await (await fetch(byNode["3"].url)).arrayBuffer());
    const { data } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
    expect([data[0], data[1], data[2]]).toEqual([0, 255, 255]);
    expect(await (await fetch(byNode["6"].url)).text()).toBe("some text");
    expect(done.progress).toMatchObject({ value: 1, nodes_total: 12, nodes_done: 12 });
    const mine = events.filter((e) => "job_id" in e && e.job_id === job.id);
    expect(mine.filter((e) => e.type === "step").map((e) => (e as { value: number }).value)).toEqual(expect.arrayContaining([1, 2, 3]));
    const preview = mine.find((e) => e.type === "preview") as Extract<JobEvent, { type: "preview" }> | undefined;
    expect(preview?.node_id).toBe("4");
    expect(preview?.data.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
  });

  it("serves the hosted interface over the upstream: upload, prompt, socket, history, view", async () => {
    const client = new ComfyClient(front.url);
    await client.connect(true);
    try {
      const upload = await client.uploadImage(await png(0, 0, 255), "blue.png");
      const res = await client.queuePrompt({
        "1": { class_type: "LoadImage", inputs: { image: upload.name } },
        "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "hosted" } },
      });
      expect(res.status).toBe(200);
      const { prompt_id } = (await res.json()) as { prompt_id: string };
      const mine = await client.waitForEnd(prompt_id);
      expect(mine.map((m) => m.type)).toContain("execution_success");
      const history = await client.history(prompt_id);
      const files = Object.values(history[prompt_id].outputs as Record<string, { images?: any[] }>).flatMap((o) => o.images ?? []);
      expect(files).toHaveLength(1);
      const got = await client.view(files[0]);
      expect(got.status).toBe(200);
      const { data } = await sharp(got.bytes).raw().toBuffer({ resolveWithObject: true });
      expect([data[0], data[1], data[2]]).toEqual([0, 0, 255]);
      const info = (await call("GET", `${front.url}/api/object_info/FlowgateSampler`)).body;
      expect(Object.keys(info)).toEqual(["FlowgateSampler"]);
    } finally {
      client.close();
    }
  });

  it("rejects invalid graphs at submission from ComfyUI's node definitions, in both interfaces", async () => {
    const graph = {
      "1": { class_type: "NoSuchNode", inputs: {} },
      "2": { class_type: "EmptyImage", inputs: { width: 0, height: 8, batch_size: 1, color: 0 } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0] } },
    };
    const v2 = await call("POST", `${front.url}/api/v2/jobs`, { workflow: graph });
    expect(v2.status).toBe(422);
    expect(v2.body.error.code).toBe("invalid_workflow");
    expect(reasons(v2.body.error.details.node_errors)).toEqual({
      "1": [{ field: "class_type", reason: "unknown_class" }],
      "2": [{ field: "width", reason: "out_of_range" }],
      "3": [{ field: "filename_prefix", reason: "missing_input" }],
    });
    const hosted = await call("POST", `${front.url}/api/prompt`, { prompt: graph });
    expect(hosted.status).toBe(400);
    expect(hosted.body.error.type).toBe("missing_node_type");
    expect(Object.keys(hosted.body.node_errors).sort()).toEqual(["1", "2", "3"]);
  });

  it("cancels a running job by interrupting its prompt, and a job still queued upstream by deleting it", async () => {
    const running = await submit(front.url, delayGraph(60));
    await waitJob(front.url, running.id, (j) => j.status === "running", "the first job to run");
    // The upstream runs one job at a time: the second waits in its queue.
    const queued = await submit(front.url, delayGraph(60));
    const upstreamJobs = async () => (await call("GET", `${upstream.url}/api/v2/jobs?limit=100`)).body.jobs as any[];
    const [first, second] = await until(async () => {
      const jobs = await upstreamJobs();
      const r = jobs.find((j) => j.status === "running");
      const q = jobs.find((j) => j.status === "queued");
      return r && q ? [r, q] : undefined;
    }, "one upstream job running and one queued");
    expect((await call("POST", `${front.url}/api/v2/jobs/${queued.id}/cancel`)).status).toBe(200);
    expect((await waitJob(front.url, queued.id, (j) => TERMINAL.includes(j.status), "the queued job to end")).status).toBe("canceled");
    expect((await call("POST", `${front.url}/api/v2/jobs/${running.id}/cancel`)).status).toBe(200);
    expect((await waitJob(front.url, running.id, (j) => TERMINAL.includes(j.status), "the running job to end")).status).toBe("canceled");
    const after = await until(async () => {
      const jobs = await upstreamJobs();
      const a = jobs.find((j) => j.id === first.id);
      const b = jobs.find((j) => j.id === second.id);
      return TERMINAL.includes(a?.status) && TERMINAL.includes(b?.status) ? [a, b] : undefined;
    }, "both upstream jobs to end");
    expect(after.map((j: any) => j.status)).toEqual(["canceled", "canceled"]);
    expect(after[1].started_at).toBeNull(); // deleted from the queue, never ran
  });

  it("forwards the partner key with that prompt only, and keeps it nowhere", async () => {
    vendorAuth.length = 0;
    const job = await submit(
      front.url,
      { "1": { class_type: "FlowgatePartnerCall", inputs: { prompt: "hello" } }, "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } },
      { api_key_vendor_org: KEY },
    );
    const done = await waitJob(front.url, job.id, (j) => TERMINAL.includes(j.status), "the partner job to end");
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expect(vendorAuth).toEqual([`Bearer ${KEY}`]);
    // A job without the key fails there: nothing was remembered from the first.
    const bare = await submit(front.url, {
      "1": { class_type: "FlowgatePartnerCall", inputs: { prompt: "again" } },
      "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
    });
    const failed = await waitJob(front.url, bare.id, (j) => TERMINAL.includes(j.status), "the keyless job to end");
    expect(failed.status).toBe("failed");
    expect(failed.error.code).toBe("partner_node_error");
    // Staged outputs are still being named meanwhile: a temp file may go between listing and reading.
    expect(await filesContaining(front.dataDir, KEY)).toEqual([]);
    expect(JSON.stringify(await call("GET", `${front.url}/api/v2/jobs/${job.id}`))).not.toContain(KEY);
  });
});

describe("comfyui mode when ComfyUI goes away", () => {
  it("answers 500 upstream_error and is not ready while unreachable; running jobs end worker_lost when it restarts without them", async () => {
    let upstream = await startUpstream();
    const firstDataDir = upstream.dataDir;
    // Lost prompts must be found by the reconcile after the restart, not by a give-up timer.
    const front = await startFront([upstream.url], [], { lostAfterMs: 120_000 });
    try {
      expect((await call("GET", `${front.url}/readyz`)).status).toBe(200);
      const job = await submit(front.url, delayGraph(60));
      await until(
        async () => ((await call("GET", `${upstream.url}/api/v2/jobs?status=running`)).body.jobs.length > 0 ? true : undefined),
        "the job to run upstream",
      );
      // It is running for the front too once the upstream's execution_start reached it.
      await waitJob(front.url, job.id, (j) => j.status === "running", "the job to run");

      await upstream.kill();
      // Reachability comes from the socket while it is open: its close is seen a moment later.
      const ready = await until(async () => {
        const r = await call("GET", `${front.url}/readyz`);
        return r.status === 503 ? r : undefined;
      }, "not ready");
      expect(ready.body.checks.engine).toBe(false);
      const down = await call("POST", `${front.url}/api/v2/jobs`, { workflow: delayGraph(1) });
      expect(down.status).toBe(500);
      expect(down.body.error.code).toBe("upstream_error");
      expect((await call("GET", `${front.url}/api/v2/jobs/${job.id}`)).body.status).toBe("running");

      // The same address, a fresh data dir: a ComfyUI restarted without its queue.
      upstream = await startUpstream({ port: upstream.port, dataDir: `${upstream.dataDir}-restarted` });
      const lost = await waitJob(front.url, job.id, (j) => TERMINAL.includes(j.status), "the job to end after the restart");
      expect(lost.status).toBe("failed");
      expect(lost.error.code).toBe("worker_lost");
      await until(async () => ((await call("GET", `${front.url}/readyz`)).status === 200 ? true : undefined), "ready again");
      const again = await submit(front.url, {
        "1": { class_type: "PrimitiveString", inputs: { value: "back" } },
        "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
      });
      expect((await waitJob(front.url, again.id, (j) => TERMINAL.includes(j.status), "a job after the restart")).status).toBe("succeeded");
    } finally {
      await front.stop();
      await upstream.stop();
      await rm(firstDataDir, { recursive: true, force: true });
    }
  });
});

describe("comfyui mode with several instances", () => {
  it("sends each job to the least busy instance", async () => {
    const [a, b] = await Promise.all([startUpstream({ flags: ["--concurrency", "1"] }), startUpstream({ flags: ["--concurrency", "1"] })]);
    const front = await startFront([a.url, b.url], ["--concurrency", "4"]);
    try {
      // Keep instance a busy with work queued directly on it.
      for (let i = 0; i < 3; i++) expect((await call("POST", `${a.url}/api/v2/jobs`, { workflow: delayGraph(60) })).status).toBe(201);
      const quick = { "1": { class_type: "PrimitiveString", inputs: { value: "quick" } }, "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } };
      for (let i = 0; i < 2; i++) {
        const job = await submit(front.url, quick);
        expect((await waitJob(front.url, job.id, (j) => TERMINAL.includes(j.status), "a quick job")).status).toBe("succeeded");
      }
      const onA = (await call("GET", `${a.url}/api/v2/jobs?limit=100`)).body.jobs.length;
      const onB = (await call("GET", `${b.url}/api/v2/jobs?limit=100`)).body.jobs.length;
      expect([onA, onB]).toEqual([3, 2]);
      // Now b is the busy one: a long job there, two more queued behind it.
      for (let i = 0; i < 6; i++) expect((await call("POST", `${b.url}/api/v2/jobs`, { workflow: delayGraph(60) })).status).toBe(201);
      for (const j of (await call("GET", `${a.url}/api/v2/jobs?limit=100`)).body.jobs) await call("POST", `${a.url}/api/v2/jobs/${j.id}/cancel`);
      const job = await submit(front.url, quick);
      expect((await waitJob(front.url, job.id, (j) => TERMINAL.includes(j.status), "a quick job")).status).toBe("succeeded");
      expect((await call("GET", `${a.url}/api/v2/jobs?status=succeeded`)).body.jobs).toHaveLength(1);
    } finally {
      await front.stop();
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});

describe("comfyui mode at ComfyUI's queue bound", () => {
  it("answers 429 queue_full with Retry-After while every instance's queue is at the bound", async () => {
    const upstream = await startUpstream({ flags: ["--concurrency", "1"] });
    const front = await startFront([upstream.url], ["--queue-limit", "2"]);
    try {
      const direct: string[] = [];
      for (let i = 0; i < 2; i++) direct.push((await call("POST", `${upstream.url}/api/v2/jobs`, { workflow: delayGraph(60) })).body.id);
      // The front learns the load from the upstream's `status` messages, a moment after the queue changed.
      await until(
        () =>
          front.engine.admit().then(
            () => undefined,
            () => true,
          ),
        "the front to see the full queue",
      );
      const full = await call("POST", `${front.url}/api/v2/jobs`, { workflow: delayGraph(1) });
      expect(full.status).toBe(429);
      expect(full.body.error.code).toBe("queue_full");
      expect(full.headers.get("retry-after")).toMatch(/^\d+$/);
      await call("POST", `${upstream.url}/api/v2/jobs/${direct[1]}/cancel`);
      await until(
        () =>
          front.engine.admit().then(
            () => true,
            () => undefined,
          ),
        "the front to see room in the queue",
      );
      const job = await submit(front.url, {
        "1": { class_type: "PrimitiveString", inputs: { value: "room" } },
        "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
      });
      await call("POST", `${upstream.url}/api/v2/jobs/${direct[0]}/cancel`);
      expect((await waitJob(front.url, job.id, (j) => TERMINAL.includes(j.status), "the job to end")).status).toBe("succeeded");
    } finally {
      await front.stop();
      await upstream.stop();
    }
  });
});
