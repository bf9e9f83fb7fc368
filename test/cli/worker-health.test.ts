// `flowgate worker --health` (FLOWGATE_HEALTH=1, as the container image sets it): a real worker
// process on a PostgreSQL schema of its own answers /healthz and /readyz on --host:--port, for a
// container's HEALTHCHECK or a pod's probes, and still drains and exits 0 on SIGTERM. Without it
// a worker listens nowhere.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, dropTestSchema, postgresUnavailable, schemaUrl } from "../postgres/pg.ts";
import { eventually, startCli, type CliProcess } from "./cli.ts";

const unavailable = await postgresUnavailable();
if (unavailable) console.warn(`worker health tests skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)("flowgate worker --health", { timeout: 60_000 }, () => {
  let schema: string;
  let dir: string;
  const children: CliProcess[] = [];
  beforeAll(async () => {
    schema = await createTestSchema();
    dir = await mkdtemp(join(tmpdir(), "flowgate-worker-health-"));
  });
  afterAll(async () => {
    for (const c of children) if (c.child.exitCode === null) c.child.kill("SIGKILL");
    await Promise.all(children.map((c) => c.exited));
    await dropTestSchema(schema);
    await rm(dir, { recursive: true, force: true });
  });

  function worker(name: string, env: Record<string, string>): CliProcess {
    const child = startCli(["worker", "--database-url", schemaUrl(schema), "--data-dir", join(dir, name), "--host", "127.0.0.1", "--port", "0"], env);
    children.push(child);
    return child;
  }

  it("answers /healthz and /readyz, 404 for anything else, and stops on SIGTERM with exit 0", async () => {
    const w = worker("with", { FLOWGATE_HEALTH: "1" });
    const base = await eventually(() => /health checks on (http:\/\/\S+)\/healthz/.exec(w.stdout())?.[1], `the health line in: ${w.stdout()}${w.stderr()}`);
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    const ready = await fetch(`${base}/readyz`);
    const body = (await ready.json()) as { status: string; checks: Record<string, boolean> };
    expect(ready.status, JSON.stringify(body)).toBe(200);
    expect(body.status).toBe("ready");
    expect(body.checks).toMatchObject({ store: true, dispatch: true });
    const other = await fetch(`${base}/api/v2/jobs`);
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe("not_found");
    w.child.kill("SIGTERM");
    const end = await w.exited;
    expect(end.code, end.stderr).toBe(0);
  });

  it("without --health a worker says nothing of health checks", async () => {
    const w = worker("without", {});
    await eventually(() => (w.stdout().includes("worker claiming jobs") ? true : undefined), `the worker's start in: ${w.stdout()}${w.stderr()}`);
    expect(w.stdout()).not.toContain("health checks");
    // Its settings line names what a worker uses: no API token, upload bound or listening port.
    const settings = w
      .stdout()
      .split("\n")
      .find((line) => line.startsWith("flowgate: surface="));
    expect(settings, w.stdout()).toBeDefined();
    expect(settings).toContain("database=");
    for (const apiOnly of ["token=", "port=", "host=", "maxUploadSize=", "publicUrl="]) expect(settings, w.stdout()).not.toContain(` ${apiOnly}`);
    w.child.kill("SIGTERM");
    expect((await w.exited).code).toBe(0);
  });
});
