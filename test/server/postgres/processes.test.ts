// API nodes and workers as separate processes on one PostgreSQL database: real `flowgate serve
// --no-dispatch` and `flowgate worker` children, a fresh schema each, a blob directory they share.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli, startCli, type CliProcess } from "../../cli/cli.ts";
import { adminQuery, createTestSchema, dropTestSchema, postgresUnavailable, schemaUrl } from "../../postgres/pg.ts";
import { Api, delayGraph, imageGraph, spawnCli, SseClient, waitFor, type CliServer } from "../helpers.ts";

const unavailable = await postgresUnavailable();
/** Short, so that a dead worker is noticed fast; the heartbeat is a third of it. */
const LEASE_MS = 1000;

let schema: string;
let url: string;
let dirs: string[];
/** The blob directory every process of a test shares. */
let sharedBlobs: string;
let children: Array<{ child: CliProcess["child"] }>;

beforeEach(async () => {
  if (unavailable !== null) return;
  schema = await createTestSchema();
  url = schemaUrl(schema);
  dirs = [];
  children = [];
  sharedBlobs = await tempDir();
});

afterEach(async () => {
  if (unavailable !== null) return;
  for (const { child } of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await Promise.all(children.map(({ child }) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once("close", r)) : null)));
  await dropTestSchema(schema);
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "fg-proc-"));
  dirs.push(dir);
  return dir;
}

/** Flags of every process of a test: the database, a data dir of its own, the shared blobs, the lease. */
async function common(): Promise<string[]> {
  return ["--database-url", url, "--data-dir", await tempDir(), "--blob-dir", sharedBlobs, "--lease", `${LEASE_MS}ms`];
}

/** `flowgate serve` (an API node with --no-dispatch), listening on a free port. */
async function apiNode(...flags: string[]): Promise<{ api: Api; server: CliServer }> {
  const server = await spawnCli([...(await common()), "--port", "0", "--shutdown-grace", "0", ...flags]);
  children.push(server);
  return { api: new Api(server.url), server };
}

/** `flowgate worker`, once it claims jobs. */
async function worker(...flags: string[]): Promise<CliProcess> {
  const w = startCli(["worker", ...(await common()), "--shutdown-grace", "0", ...flags]);
  children.push(w);
  await waitFor(() => w.stdout() + w.stderr(), (out) => out.includes("worker claiming jobs") || w.child.exitCode !== null, "worker start", 30_000);
  expect(w.stdout(), w.stderr()).toContain("worker claiming jobs");
  return w;
}

async function row(id: string): Promise<Record<string, unknown>> {
  return (await adminQuery(`SELECT status, worker_id, started_at, error FROM ${schema}.jobs WHERE id = $1`, [id]))[0]!;
}

describe.skipIf(unavailable !== null)("processes on PostgreSQL", () => {
  it("refuses a worker and --no-dispatch without a PostgreSQL URL, in one line", async () => {
    const dir = await tempDir();
    const w = await runCli(["worker", "--data-dir", dir]);
    expect(w.code).toBe(1);
    expect(w.stderr).toMatch(/^flowgate worker: a worker needs --database-url[^\n]*\n$/);
    const s = await runCli(["serve", "--no-dispatch", "--data-dir", dir, "--port", "0"]);
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(/^flowgate serve: --no-dispatch needs --database-url[^\n]*\n$/);
  });

  it("an API node without dispatch takes the job and a worker process runs it to success", async () => {
    const { api } = await apiNode("--no-dispatch");
    const job = await api.submit(imageGraph("proc"));
    expect(job.status).toBe("queued");
    const w = await worker();
    const done = await api.waitTerminal(job.id, 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    // Outputs written by the worker are served by the API node (the shared blob directory).
    const image = await fetch(new URL(done.outputs[0].url, api.base));
    expect(image.status).toBe(200);
    expect((await row(job.id)).worker_id).toMatch(new RegExp(`:${w.child.pid}:`));
  });

  it("a SIGKILLed worker's job ends failed worker_lost within the lease bound, and is not run again", async () => {
    const { api } = await apiNode("--no-dispatch");
    const doomed = await worker();
    const job = await api.submit(delayGraph(60));
    await api.waitJob(job.id, (j) => j.status === "running", "running", 30_000);
    const before = await row(job.id);
    expect(before.worker_id).toMatch(new RegExp(`:${doomed.child.pid}:`));
    const survivor = await worker(); // free to claim: it must not take the lost job
    doomed.child.kill("SIGKILL");
    const killedAt = Date.now();
    const ended = await api.waitTerminal(job.id, 15_000);
    // Bound: the lease, plus a heartbeat of the node that notices, plus the poll; generous for a busy machine.
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS * 8);
    expect(ended.status).toBe("failed");
    expect(ended.error.code).toBe("worker_lost");
    const after = await row(job.id);
    expect(after.worker_id).toBe(before.worker_id); // never claimed by the survivor
    expect(after.started_at).toBe(before.started_at);
    expect(survivor.child.exitCode).toBeNull();
  });

  it("a worker stopped by SIGTERM gives up its running job at once (worker_lost, not a lease later)", async () => {
    const { api } = await apiNode("--no-dispatch");
    const w = await worker("--lease", "10m");
    const job = await api.submit(delayGraph(60));
    await api.waitJob(job.id, (j) => j.status === "running", "running", 30_000);
    w.child.kill("SIGTERM");
    expect((await w.exited).code).toBe(0);
    const ended = await api.job(job.id); // already ended when the worker exited
    expect(ended.status).toBe("failed");
    expect(ended.error.code).toBe("worker_lost");
  });

  it("a cancel on the API node stops the job on the worker; a starting server leaves running jobs alone", async () => {
    const { api } = await apiNode("--no-dispatch");
    await worker();
    const job = await api.submit(delayGraph(60));
    await api.waitJob(job.id, (j) => j.status === "running", "running", 30_000);
    // Another node starting (dispatching, on the same database) must not fail the running job.
    const other = await apiNode();
    expect((await other.api.job(job.id)).status).toBe("running");
    const res = await api.post(`/api/v2/jobs/${job.id}/cancel`, {});
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("canceling");
    const ended = await api.waitTerminal(job.id, 15_000);
    expect(ended.status).toBe("canceled");
  });

  it("a stream opened on the API node follows the status of a job a worker runs to its end", async () => {
    const { api } = await apiNode("--no-dispatch");
    const job = await api.submit(delayGraph(1.5)); // long enough for "running" to be read before the end
    const stream = new SseClient(`${api.base}/api/v2/jobs/${job.id}/events`);
    try {
      await stream.waitUntil((c) => c.of("status").length >= 1, "the first status");
      await worker();
      await stream.done; // the terminal status ends the stream
      const statuses = stream.of("status").map((e) => e.json.status);
      expect(statuses[0]).toBe("queued");
      expect(statuses).toContain("running");
      expect(statuses.at(-1)).toBe("succeeded");
      expect(new Set(statuses).size).toBe(statuses.length); // each change once
    } finally {
      stream.close();
    }
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
