// GET /metrics: Prometheus' text format read back by a real parser; the families and their
// labels after real traffic; no label value is a job id; the operator token per surface.
import { randomUUID } from "node:crypto";
import parsePrometheusTextFormat, { type PromFamily } from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlowgateMetrics } from "../../src/metrics/metrics.ts";
import { failingGraph } from "../client/fixtures.ts";
import { delayGraph, expectError, imageGraph, SseClient, startTestServer, waitFor, type TestServer } from "./helpers.ts";

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

/**
 * The scrape's families by name, with their declared types; and each histogram's `_bucket`,
 * `_count` and `_sum` series as families of their own: the parser folds a labelled histogram
 * into one unlabelled series, so it reads them a second time declared untyped.
 */
async function scrape(server: TestServer, token?: string): Promise<Map<string, PromFamily>> {
  const res = await server.api.get("/metrics", token ? { token } : {});
  expect(res.status, res.text).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const families = new Map(parsePrometheusTextFormat(res.text).map((f) => [f.name, f]));
  const histograms = [...families.values()].filter((f) => f.type === "HISTOGRAM").map((f) => f.name);
  const untyped = res.text.replace(/^# TYPE (\S+) histogram$/gm, "# TYPE $1 untyped");
  for (const f of parsePrometheusTextFormat(untyped)) {
    if (!histograms.some((h) => f.name.startsWith(h + "_"))) continue;
    // Series of one labelled histogram interleave (buckets, sum, count per label set).
    const seen = families.get(f.name);
    if (seen) seen.metrics.push(...f.metrics);
    else families.set(f.name, f);
  }
  return families;
}

function sample(families: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}) {
  const family = families.get(name);
  expect(family, `family ${name}`).toBeDefined();
  return family!.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

describe("GET /metrics (self-hosted, open)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  it("exposes the families with bounded labels after real traffic", async () => {
    const job = await server.api.submit(imageGraph("metrics"));
    await server.api.waitTerminal(job.id);
    await server.api.get(`/api/v2/jobs/${randomUUID()}`); // 404 on a known route
    await server.api.get(`/no/such/${randomUUID()}`); // no route at all
    const running = await server.api.submit(delayGraph(30));
    const stream = new SseClient(`${server.url}/api/v2/jobs/${running.id}/events`);
    await stream.waitUntil((c) => c.events.length > 0, "the first event");
    await server.api.waitJob(running.id, (j) => j.status === "running", "the delay job running");

    // The finished job leaves the dispatcher's running set a moment after its status is stored.
    const families = await waitFor(() => scrape(server), (f) => Number(sample(f, "flowgate_jobs_running")?.value) === 1, "one running job");
    expect(families.get("flowgate_http_request_duration_seconds")?.type).toBe("HISTOGRAM");
    const count = (name: string, labels: Record<string, string> = {}) => Number(sample(families, `${name}_count`, labels)?.value);
    expect(count("flowgate_http_request_duration_seconds", { method: "POST", route: "/api/v2/jobs", status: "201" })).toBeGreaterThanOrEqual(2);
    expect(count("flowgate_http_request_duration_seconds", { method: "GET", route: "/api/v2/jobs/:id", status: "404" })).toBe(1);
    expect(count("flowgate_http_request_duration_seconds", { method: "GET", route: "(unmatched)", status: "404" })).toBe(1);
    expect(sample(families, "flowgate_http_request_duration_seconds_bucket", { route: "/api/v2/jobs", le: "+Inf" })).toBeDefined();

    expect(Number(sample(families, "flowgate_jobs_total", { status: "succeeded" })?.value)).toBeGreaterThanOrEqual(1);
    expect(Number(sample(families, "flowgate_jobs_total", { status: "queued" })?.value)).toBeGreaterThanOrEqual(2);
    expect(families.get("flowgate_queue_depth")?.type).toBe("GAUGE");
    expect(Number(sample(families, "flowgate_jobs_running")?.value)).toBe(1);
    for (const name of ["flowgate_job_queue_seconds", "flowgate_job_execution_seconds", "flowgate_engine_node_duration_seconds", "flowgate_store_commit_seconds"]) {
      expect(families.get(name)?.type, name).toBe("HISTOGRAM");
    }
    expect(count("flowgate_job_queue_seconds")).toBeGreaterThanOrEqual(2);
    expect(count("flowgate_job_execution_seconds", { status: "succeeded" })).toBeGreaterThanOrEqual(1);
    expect(count("flowgate_engine_node_duration_seconds", { class_type: "SaveImage" })).toBeGreaterThanOrEqual(1);
    expect(count("flowgate_store_commit_seconds", { operation: "createJob" })).toBeGreaterThanOrEqual(2);
    expect(count("flowgate_store_commit_seconds", { operation: "transitionJob" })).toBeGreaterThanOrEqual(2);
    expect(Number(sample(families, "flowgate_sse_streams_open")?.value)).toBe(1);
    expect(Number(sample(families, "flowgate_websockets_open")?.value)).toBe(0);
    expect(families.get("flowgate_comfyui_up")?.metrics).toEqual([]); // the embedded engine has no upstream
    expect(families.has("process_cpu_user_seconds_total")).toBe(true);
    expect(families.has("nodejs_eventloop_lag_seconds")).toBe(true);

    for (const family of families.values()) {
      for (const m of family.metrics) {
        for (const [name, value] of Object.entries(m.labels ?? {})) expect(value, `${family.name}{${name}}`).not.toMatch(UUID);
      }
    }

    await server.api.post(`/api/v2/jobs/${running.id}/cancel`);
    await stream.waitUntil((c) => c.ended, "the stream's end");
    await waitFor(() => scrape(server), (f) => Number(sample(f, "flowgate_sse_streams_open")?.value) === 0, "no open stream");
  });
});

describe("GET /metrics: what the operator's dashboard and alerts read", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  it("failures by error code, readiness, storage, build info, busy workers and the queue's age", async () => {
    const failed = await server.api.waitTerminal((await server.api.submit(failingGraph())).id);
    expect(failed.status).toBe("failed");
    const code = (failed.error as { code: string }).code;
    const families = await scrape(server);
    expect(families.get("flowgate_job_failures_total")?.type).toBe("COUNTER");
    expect(Number(sample(families, "flowgate_job_failures_total", { code })?.value)).toBe(1);
    expect(sample(families, "flowgate_ready")?.value).toBe("1");
    for (const check of ["store", "engine", "queue", "dispatch", "storage"]) expect(sample(families, "flowgate_readiness_check", { check })?.value, check).toBe("1");
    expect(sample(families, "flowgate_storage_short")?.value).toBe("0");
    for (const volume of ["data", "blobs"]) {
      expect(Number(sample(families, "flowgate_storage_free_bytes", { volume })?.value), volume).toBeGreaterThan(0);
      expect(Number(sample(families, "flowgate_storage_size_bytes", { volume })?.value), volume).toBeGreaterThanOrEqual(Number(sample(families, "flowgate_storage_free_bytes", { volume })?.value));
    }
    const build = sample(families, "flowgate_build_info");
    expect(build?.value).toBe("1");
    expect(build?.labels).toMatchObject({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), node_version: process.versions.node, surface: "self-hosted", engine: "embedded", store: "sqlite" });
    expect(sample(families, "flowgate_workers_busy")?.value).toBe("0");
    expect(sample(families, "flowgate_queue_oldest_seconds")?.value).toBe("0");
    // A running job makes this server a busy worker.
    const running = await server.api.submit(delayGraph(30));
    await server.api.waitJob(running.id, (j) => j.status === "running", "the delay job running");
    expect(sample(await scrape(server), "flowgate_workers_busy")?.value).toBe("1");
    await server.api.post(`/api/v2/jobs/${running.id}/cancel`);
    await server.api.waitTerminal(running.id);
  });

  it("a route of several methods is labelled by each request's one method", async () => {
    for (const method of ["GET", "HEAD"] as const) {
      const res = await fetch(`${server.url}/ui/docs.html`, { method });
      expect(res.status).toBe(200);
      await res.arrayBuffer(); // the response ends (and is measured) once its body is read
    }
    const families = await scrape(server);
    const methods = new Set(families.get("flowgate_http_request_duration_seconds_count")!.metrics.map((m) => m.labels!.method!));
    expect([...methods].filter((m) => m.includes(","))).toEqual([]);
    const count = (method: string) => Number(sample(families, "flowgate_http_request_duration_seconds_count", { method, route: "/ui/*" })?.value);
    expect(count("GET")).toBe(1);
    expect(count("HEAD")).toBe(1);
  });
});

describe("GET /metrics with an operator token", () => {
  it("self-hosted: 401 without the token or with a wrong one, 200 with it", async () => {
    const server = await startTestServer({ flags: ["--metrics-token", "ops-secret"] });
    try {
      expectError(await server.api.get("/metrics"), 401, "unauthorized");
      expectError(await server.api.get("/metrics", { token: "wrong" }), 401, "unauthorized");
      expect((await scrape(server, "ops-secret")).has("flowgate_queue_depth")).toBe(true);
    } finally {
      await server.stop();
    }
  });

  it("cloud: not served (404) without a configured token; the token opens it, account keys do not", async () => {
    const closed = await startTestServer({ flags: ["--surface", "cloud"] });
    try {
      expectError(await closed.api.get("/metrics"), 404, "not_found");
    } finally {
      await closed.stop();
    }
    const open = await startTestServer({ flags: ["--surface", "cloud", "--metrics-token", "ops-secret"] });
    try {
      expectError(await open.api.get("/metrics", { token: "fg_not_the_operator" }), 401, "unauthorized");
      expect((await scrape(open, "ops-secret")).has("flowgate_jobs_total")).toBe(true);
    } finally {
      await open.stop();
    }
  });
});

describe("ComfyUI upstream metrics", () => {
  it("report each configured instance's reachability, reconnections and output source, labelled by its URL", async () => {
    const metrics = new FlowgateMetrics();
    let upstreams = [
      { url: "http://gpu1:8188", reachable: true, reconnects: 0, outputFolder: true },
      { url: "http://gpu2:8188", reachable: false, reconnects: 3, outputFolder: false },
    ];
    metrics.observeSources({ queueDepth: () => 7, runningJobs: () => 2, upstreams: () => upstreams });
    const read = async () => new Map(parsePrometheusTextFormat(await metrics.render()).map((f) => [f.name, f]));
    let families = await read();
    expect(sample(families, "flowgate_comfyui_up", { instance: "http://gpu1:8188" })?.value).toBe("1");
    expect(sample(families, "flowgate_comfyui_up", { instance: "http://gpu2:8188" })?.value).toBe("0");
    expect(families.get("flowgate_comfyui_reconnects_total")?.type).toBe("COUNTER");
    expect(sample(families, "flowgate_comfyui_reconnects_total", { instance: "http://gpu2:8188" })?.value).toBe("3");
    expect(sample(families, "flowgate_comfyui_output_folder", { instance: "http://gpu1:8188" })?.value).toBe("1");
    expect(sample(families, "flowgate_comfyui_output_folder", { instance: "http://gpu2:8188" })?.value).toBe("0");
    expect(sample(families, "flowgate_queue_depth")?.value).toBe("7");
    upstreams = [{ url: "http://gpu2:8188", reachable: true, reconnects: 4, outputFolder: false }];
    families = await read();
    expect(families.get("flowgate_comfyui_up")?.metrics).toEqual([{ labels: { instance: "http://gpu2:8188" }, value: "1" }]);
    expect(sample(families, "flowgate_comfyui_reconnects_total", { instance: "http://gpu2:8188" })?.value).toBe("4");
    metrics.close();
  });
});
