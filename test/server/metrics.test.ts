// GET /metrics: Prometheus' text format read back by a real parser; the families and their
// labels after real traffic; no label value is a job id; the operator token per surface.
import { randomUUID } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlowgateMetrics } from "../../src/metrics/metrics.ts";
import { UI_DIST } from "../../src/server/ui.ts";
import { sample, scrape } from "./metrics-scrape.ts";
import { delayGraph, expectError, imageGraph, SseClient, startTestServer, waitFor, type TestServer } from "./helpers.ts";

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

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
    const assets = (await readdir(join(UI_DIST, "assets"))).map((f) => `/ui/assets/${f}`);
    for (const path of [...assets, "/ui/scalar/standalone.js"]) expect((await server.api.get(path)).status, path).toBe(200);
    const running = await server.api.submit(delayGraph(30));
    const stream = new SseClient(`${server.url}/api/v2/jobs/${running.id}/events`);
    await stream.waitUntil((c) => c.events.length > 0, "the first event");
    await server.api.waitJob(running.id, (j) => j.status === "running", "the delay job running");

    // The finished job leaves the dispatcher's running set a moment after its status is stored.
    const families = await waitFor(
      () => scrape(server),
      (f) => Number(sample(f, "flowgate_jobs_running")?.value) === 1,
      "one running job",
    );
    expect(families.get("flowgate_http_request_duration_seconds")?.type).toBe("HISTOGRAM");
    const count = (name: string, labels: Record<string, string> = {}) => Number(sample(families, `${name}_count`, labels)?.value);
    expect(count("flowgate_http_request_duration_seconds", { method: "POST", route: "/api/v2/jobs", status: "201" })).toBeGreaterThanOrEqual(2);
    expect(count("flowgate_http_request_duration_seconds", { method: "GET", route: "/api/v2/jobs/:id", status: "404" })).toBe(1);
    expect(count("flowgate_http_request_duration_seconds", { method: "GET", route: "(unmatched)", status: "404" })).toBe(1);
    expect(sample(families, "flowgate_http_request_duration_seconds_bucket", { route: "/api/v2/jobs", le: "+Inf" })).toBeDefined();
    // The build's files (hashed names, new ones each build) share the static route's label.
    expect(count("flowgate_http_request_duration_seconds", { method: "GET", route: "/ui/*", status: "200" })).toBeGreaterThanOrEqual(assets.length);
    const routes = new Set(
      families.get("flowgate_http_request_duration_seconds_count")!.metrics.map((m) => (m as { labels: Record<string, string> }).labels.route),
    );
    expect([...routes].filter((r) => r?.startsWith("/ui/") && r !== "/ui/*")).toEqual([]);

    expect(Number(sample(families, "flowgate_jobs_total", { status: "succeeded" })?.value)).toBeGreaterThanOrEqual(1);
    expect(Number(sample(families, "flowgate_jobs_total", { status: "queued" })?.value)).toBeGreaterThanOrEqual(2);
    expect(families.get("flowgate_queue_depth")?.type).toBe("GAUGE");
    expect(Number(sample(families, "flowgate_jobs_running")?.value)).toBe(1);
    for (const name of [
      "flowgate_job_queue_seconds",
      "flowgate_job_execution_seconds",
      "flowgate_engine_node_duration_seconds",
      "flowgate_store_commit_seconds",
    ]) {
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
    await waitFor(
      () => scrape(server),
      (f) => Number(sample(f, "flowgate_sse_streams_open")?.value) === 0,
      "no open stream",
    );
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
