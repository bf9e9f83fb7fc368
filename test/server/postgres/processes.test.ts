// API nodes and workers as separate processes on one PostgreSQL database: real `flowgate serve
// --no-dispatch` and `flowgate worker` children, a fresh schema each, a blob directory they share.
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { runCli, startCli, type CliProcess } from "../../cli/cli.ts";
import { adminQuery, createTestSchema, dropTestSchema, postgresUnavailable, schemaUrl } from "../../postgres/pg.ts";
import { redisUnavailable, TEST_REDIS_URL } from "../../postgres/redis.ts";
import { Api, delayGraph, imageGraph, spawnCli, SseClient, waitFor, type CliServer } from "../helpers.ts";
import { samplerGraph } from "../../fixtures/graphs.ts";

const unavailable = (await postgresUnavailable()) ?? (await redisUnavailable());
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
  await waitFor(
    () => w.stdout() + w.stderr(),
    (out) => out.includes("worker claiming jobs") || w.child.exitCode !== null,
    "worker start",
    30_000,
  );
  expect(w.stdout(), w.stderr()).toContain("worker claiming jobs");
  return w;
}

async function row(id: string): Promise<Record<string, unknown>> {
  return (await adminQuery(`SELECT status, worker_id, started_at, error FROM ${schema}.jobs WHERE id = $1`, [id]))[0]!;
}

describe.skipIf(unavailable !== null)("processes on PostgreSQL", () => {
  it("refuses a worker and --no-dispatch without a PostgreSQL URL: a usage error in one line and a pointer to --help", async () => {
    const dir = await tempDir();
    const w = await runCli(["worker", "--data-dir", dir]);
    expect(w.code).toBe(2);
    expect(w.stderr).toMatch(/^flowgate worker: a worker needs --database-url[^\n]*\nRun (npx )?flowgate worker --help for usage.\n$/);
    const s = await runCli(["serve", "--no-dispatch", "--data-dir", dir, "--port", "0"]);
    expect(s.code).toBe(2);
    expect(s.stderr).toMatch(/^flowgate serve: --no-dispatch needs --database-url[^\n]*\nRun (npx )?flowgate serve --help for usage.\n$/);
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

  it("a small output's bytes live in the database, written with the job's end, a large one's in the blob directory; the API node serves both", async () => {
    const { api } = await apiNode("--no-dispatch");
    await worker();
    const small = await api.waitTerminal((await api.submit(imageGraph("small"))).id, 30_000);
    const large = await api.waitTerminal((await api.submit(samplerGraph(1, "large", 256))).id, 30_000);
    expect([small.status, large.status]).toEqual(["succeeded", "succeeded"]);
    const [tiny, big] = [small.outputs[0], large.outputs[0]];
    expect(big.size_bytes).toBeGreaterThan(64 * 1024);
    const keyOf = (output: { hash: string }) => output.hash.slice("blake3:".length);
    const kept = await adminQuery(`SELECT blob_key, length(bytes) AS n FROM ${schema}.inline_blobs`);
    expect(kept).toEqual([{ blob_key: keyOf(tiny), n: tiny.size_bytes }]);
    const filed = async (key: string) => (await stat(join(sharedBlobs, key.slice(0, 2), key.slice(2, 4), key)).catch(() => null)) !== null;
    expect(await filed(keyOf(tiny))).toBe(false);
    expect(await filed(keyOf(big))).toBe(true);
    for (const output of [tiny, big]) {
      const res = await fetch(new URL(output.url, api.base));
      const bytes = Buffer.from(await res.arrayBuffer());
      expect([res.status, bytes.length, bytes.subarray(1, 4).toString()]).toEqual([200, output.size_bytes, "PNG"]);
    }
    const ranged = await fetch(new URL(tiny.url, api.base), { headers: { range: "bytes=1-3" } });
    expect([ranged.status, await ranged.text()]).toEqual([206, "PNG"]);
    // The hosted interface's /api/view finds it by name, as ComfyUI clients fetch outputs.
    const view = await fetch(new URL(`/api/view?filename=${encodeURIComponent(tiny.name)}&type=output`, api.base));
    expect([view.status, Number(view.headers.get("content-length"))]).toEqual([200, tiny.size_bytes]);
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

  it("a stream opened on the API node follows a job a worker runs: status, progress, previews and outputs, in order", async () => {
    const { api } = await apiNode("--no-dispatch");
    const job = await api.submit(samplerGraph(6, "relay"));
    const stream = new SseClient(`${api.base}/api/v2/jobs/${job.id}/events`);
    try {
      await stream.waitUntil((c) => c.of("status").length >= 1, "the first status");
      await worker();
      await stream.done; // the terminal status ends the stream
      const kinds = stream.events.map((e) => (e.event === "status" ? `status:${e.json.status}` : e.event));
      expect(kinds[0]).toBe("status:queued");
      expect(kinds.at(-1)).toBe("status:succeeded");
      const running = kinds.indexOf("status:running");
      expect(running).toBeGreaterThan(0);
      // What the worker reported reached this node between the start and the end.
      for (const kind of ["progress", "preview", "output"]) {
        expect(kinds.indexOf(kind), `${kind} in ${kinds.join(",")}`).toBeGreaterThan(running);
      }
      const preview = stream.of("preview")[0]!.json;
      expect(preview.content_type).toBe("image/jpeg");
      expect(Buffer.from(preview.data_base64, "base64").subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
      const output = stream.of("output")[0]!.json;
      expect((await fetch(new URL(output.url, api.base))).status).toBe(200);
      expect(new Set(stream.of("status").map((e) => e.json.status)).size).toBe(stream.of("status").length); // each change once
    } finally {
      stream.close();
    }
  });

  it("the hosted WebSocket on an API node carries ComfyUI's messages and binary previews of a job a worker runs", async () => {
    const { api } = await apiNode("--no-dispatch", "--redis-url", TEST_REDIS_URL);
    await worker("--redis-url", TEST_REDIS_URL);
    const ws = new WebSocket(`${api.base.replace(/^http/, "ws")}/ws?clientId=c1`);
    const messages: Array<{ type: string; data: any }> = [];
    let binary = 0;
    ws.on("message", (data, isBinary) => (isBinary ? binary++ : messages.push(JSON.parse(String(data)))));
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    try {
      await waitFor(
        () => messages,
        (m) => m.some((x) => x.type === "status"),
        "the greeting",
      );
      const res = await api.post("/api/prompt", { prompt: samplerGraph(4, "relay"), client_id: "c1" });
      expect(res.status).toBe(200);
      const id = res.body.prompt_id as string;
      const mine = () => messages.filter((m) => m.data?.prompt_id === id);
      await waitFor(mine, (m) => m.some((x) => x.type === "execution_success"), "execution_success", 30_000);
      await waitFor(mine, (m) => m.some((x) => x.type === "executing" && x.data.node === null), "the closing executing", 5_000);
      const types = mine().map((m) => m.type);
      expect(types[0]).toBe("execution_start");
      for (const t of ["executing", "progress", "executed"]) expect(types, types.join(",")).toContain(t);
      expect(types.indexOf("executed")).toBeLessThan(types.indexOf("execution_success"));
      expect(mine().find((m) => m.type === "executed")!.data.output.images[0].type).toBe("output");
      expect(binary).toBeGreaterThan(0); // previews, through Redis
      // As ComfyUI: the outcome, then the queue's status, then the closing executing.
      const after = (m: typeof messages) => m.slice(m.findIndex((x) => x.type === "execution_success" && x.data?.prompt_id === id));
      await waitFor(
        () => messages,
        (m) => after(m).some((x) => x.type === "status" && x.data.status.exec_info.queue_remaining === 0),
        "queue_remaining 0",
        5_000,
      );
    } finally {
      ws.terminate();
    }
  });

  it("queue positions count every node's jobs, the same on each node, and workers take the jobs in that order", async () => {
    const one = await apiNode("--no-dispatch");
    const two = await apiNode("--no-dispatch");
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await (i % 2 ? two : one).api.submit(imageGraph(`pos${i}`))).id);
    for (const [i, id] of ids.entries()) {
      expect((await one.api.job(id)).queue_position).toBe(i);
      expect((await two.api.job(id)).queue_position).toBe(i);
    }
    // The queue depth gauge is the deployment's, on either node.
    for (const node of [one, two]) expect(await (await fetch(`${node.api.base}/metrics`)).text()).toMatch(/^flowgate_queue_depth 6$/m);
    await worker("--concurrency", "1");
    for (const id of ids) expect((await one.api.waitTerminal(id, 30_000)).status).toBe("succeeded");
    const started = await Promise.all(ids.map(async (id) => Number((await row(id)).started_at)));
    expect([...started].sort((a, b) => a - b)).toEqual(started);
  });

  it("an API node's bound counts the shared queue: jobs workers took no longer hold its places", async () => {
    const { api } = await apiNode("--no-dispatch", "--queue-limit", "2");
    await worker("--concurrency", "4");
    // One after another, each to its end: the shared queue never holds more than one job.
    for (let i = 0; i < 6; i++) {
      const res = await api.post("/api/v2/jobs", { workflow: imageGraph(`bound${i}`) });
      expect(res.status, res.text).toBe(201);
      expect((await api.waitTerminal(res.body.id, 30_000)).status).toBe("succeeded");
    }
  });

  it("an API node runs the jobs given secrets there itself (only it holds them); workers never take them", async () => {
    const { api, server } = await apiNode("--no-dispatch");
    const w = await worker();
    const job = await api.submit(imageGraph("secret"), { extra_data: { api_key_vendor_org: "sk-test-secret" } });
    const done = await api.waitTerminal(job.id, 30_000);
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    const runner = String((await row(job.id)).worker_id);
    expect(runner).toMatch(new RegExp(`:${server.child.pid}:`));
    expect(runner).not.toMatch(new RegExp(`:${w.child.pid}:`));
  });

  it("a SIGKILLed API node's secret jobs end: the one it ran worker_lost, the one it held partner_key_lost", async () => {
    const { api, server } = await apiNode("--no-dispatch", "--concurrency", "1");
    await worker(); // the survivor that notices
    const secrets = { extra_data: { api_key_vendor_org: "sk-test-secret" } };
    const running = await api.submit(delayGraph(60), secrets);
    await api.waitJob(running.id, (j) => j.status === "running", "running", 30_000);
    const waiting = await api.submit(delayGraph(60), secrets);
    await waitFor(
      () => row(waiting.id),
      (r) => r.worker_id !== null,
      "the hold on the queued secret job",
      10_000,
    );
    server.child.kill("SIGKILL");
    const other = await apiNode("--no-dispatch");
    const [ran, held] = [await other.api.waitTerminal(running.id, 15_000), await other.api.waitTerminal(waiting.id, 15_000)];
    expect([ran.status, ran.error.code]).toEqual(["failed", "worker_lost"]);
    expect([held.status, held.error.code]).toEqual(["failed", "partner_key_lost"]);
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
