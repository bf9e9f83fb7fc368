// The metrics the operator's kit (deploy/) reads: failures by error code, readiness, storage,
// build info, busy workers, the queue's age, and one method per HTTP label.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../cli/cli.ts";
import { failingGraph } from "../client/fixtures.ts";
import { databaseKind, delayGraph, startTestServer, type TestServer } from "./helpers.ts";
import { sample, scrape } from "./metrics-scrape.ts";

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
    // The metric follows the status event, which a read of the committed row may precede.
    const families = await eventually(async () => {
      const f = await scrape(server);
      return sample(f, "flowgate_job_failures_total", { code }) ? f : undefined;
    }, "the failure counted");
    expect(families.get("flowgate_job_failures_total")?.type).toBe("COUNTER");
    expect(Number(sample(families, "flowgate_job_failures_total", { code })?.value)).toBe(1);
    expect(sample(families, "flowgate_ready")?.value).toBe("1");
    for (const check of ["store", "engine", "queue", "dispatch", "storage"])
      expect(sample(families, "flowgate_readiness_check", { check })?.value, check).toBe("1");
    expect(sample(families, "flowgate_storage_short")?.value).toBe("0");
    for (const volume of ["data", "blobs"]) {
      expect(Number(sample(families, "flowgate_storage_free_bytes", { volume })?.value), volume).toBeGreaterThan(0);
      expect(Number(sample(families, "flowgate_storage_size_bytes", { volume })?.value), volume).toBeGreaterThanOrEqual(
        Number(sample(families, "flowgate_storage_free_bytes", { volume })?.value),
      );
    }
    const build = sample(families, "flowgate_build_info");
    expect(build?.value).toBe("1");
    expect(build?.labels).toMatchObject({
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      node_version: process.versions.node,
      surface: "self-hosted",
      engine: "embedded",
      store: databaseKind(),
    });
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
