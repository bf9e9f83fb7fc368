// Issue #18's deployment under failure, through a real load balancer: two API nodes (`serve
// --no-dispatch`) behind HAProxy (round robin), two `flowgate worker` processes, one PostgreSQL
// schema and one blob directory (./deployment.ts). Concurrent duplicates spread over both nodes,
// a worker and an API node SIGKILLed mid-work, and a stream on one node following another's job.
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { adminQuery, postgresUnavailable } from "../../postgres/pg.ts";
import { redisUnavailable, TEST_REDIS_URL } from "../../postgres/redis.ts";
import { delayGraph, expectError, imageGraph, SseClient, TERMINAL, waitFor } from "../helpers.ts";
import { startDeployment, type Deployment, type DeploymentOptions } from "./deployment.ts";
import { haproxyUnavailable, serverName } from "./haproxy.ts";
import { samplerGraph } from "../../fixtures/graphs.ts";

const unavailable = (await postgresUnavailable()) ?? (await redisUnavailable()) ?? (await haproxyUnavailable());
/** Short, so that a dead worker is noticed fast; the heartbeat is a third of it. */
const LEASE_MS = 1000;

let deployment: Deployment | null = null;

afterEach(async () => {
  await deployment?.stop();
  deployment = null;
});

async function deploy(options: DeploymentOptions = {}): Promise<Deployment> {
  deployment = await startDeployment({ leaseMs: LEASE_MS, redisUrl: TEST_REDIS_URL, ...options });
  return deployment;
}

/** A sampler that reports progress and a JPEG preview per step, then saves its image. */
/** Rows of the given jobs: id, status, worker_id. */
async function rows(d: Deployment, ids: string[]): Promise<Array<Record<string, unknown>>> {
  return adminQuery(`SELECT id, status, worker_id FROM ${d.schema}.jobs WHERE id = ANY($1)`, [ids]);
}

describe.skipIf(unavailable !== null)("two API nodes behind HAProxy and two workers", () => {
  it("HAProxy alternates between the nodes; 100 concurrent submissions with one Idempotency-Key over both give one 201 and 99 idempotency_key_reuse", async () => {
    const d = await deploy();
    // Round robin: consecutive requests land on alternate nodes.
    const served: Array<string | null> = [];
    for (let i = 0; i < 8; i++) {
      const res = await d.api.get("/healthz");
      expect(res.status).toBe(200);
      served.push(res.headers.get("x-lb-server"));
    }
    expect(new Set(served)).toEqual(new Set([serverName(0), serverName(1)]));
    for (let i = 1; i < served.length; i++) expect(served[i], served.join(",")).not.toBe(served[i - 1]);

    const key = randomUUID();
    const workflow = imageGraph("idem");
    const answers = await Promise.all(Array.from({ length: 100 }, () => d.api.post("/api/v2/jobs", { workflow }, { headers: { "idempotency-key": key } })));
    const byNode = new Map<string, number>();
    for (const a of answers) byNode.set(a.headers.get("x-lb-server") ?? "?", (byNode.get(a.headers.get("x-lb-server") ?? "?") ?? 0) + 1);
    expect([...byNode.keys()].sort(), JSON.stringify([...byNode])).toEqual([serverName(0), serverName(1)]);
    const created = answers.filter((a) => a.status === 201);
    expect(created, answers.map((a) => a.status).join(",")).toHaveLength(1);
    // The contract has no replay: every later request with the key is refused and never runs.
    for (const a of answers) if (a.status !== 201) expectError(a, 422, "idempotency_key_reuse");
    const id = created[0]!.body.id as string;
    expect((await adminQuery(`SELECT id FROM ${d.schema}.jobs`)).map((r) => r.id)).toEqual([id]);
    expect((await d.api.waitTerminal(id, 30_000)).status).toBe("succeeded");
  });

  it("a SIGKILLed worker's job ends failed worker_lost within the lease bound, is never run again, and the other worker keeps serving", async () => {
    const d = await deploy();
    const job = await d.api.submit(delayGraph(60));
    await d.api.waitJob(job.id, (j) => j.status === "running", "running", 30_000);
    const before = (await d.row(job.id))!;
    const doomed = d.workerOf(before.worker_id);
    expect(doomed, String(before.worker_id)).toBeGreaterThanOrEqual(0);
    const survivor = d.workers[1 - doomed]!;
    d.workers[doomed]!.child.kill("SIGKILL");
    const killedAt = Date.now();
    const ended = await d.api.waitTerminal(job.id, 15_000);
    // Bound: the lease, plus a heartbeat of the process that notices, plus the poll; generous for a busy machine.
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS * 8);
    expect([ended.status, ended.error?.code]).toEqual(["failed", "worker_lost"]);
    const after = (await d.row(job.id))!;
    expect(after.worker_id).toBe(before.worker_id); // never claimed again
    expect(after.started_at).toBe(before.started_at);

    // New jobs, spread by HAProxy over both nodes, all run on the survivor.
    const next = await Promise.all(Array.from({ length: 4 }, (_, i) => d.api.submit(imageGraph(`after${i}`))));
    for (const j of next) expect((await d.api.waitTerminal(j.id, 30_000)).status).toBe("succeeded");
    for (const r of await rows(
      d,
      next.map((j) => j.id),
    ))
      expect(d.workerOf(r.worker_id)).toBe(d.workers.indexOf(survivor));
    expect(survivor.child.exitCode).toBeNull();
    expect((await d.api.job(job.id)).status).toBe("failed"); // still, after the survivor's runs
  });

  it("a SIGKILLed API node: every job it acknowledged is in the database and runs to its end; HAProxy serves every later request from the other node", async () => {
    const d = await deploy();
    const [victim, other] = [d.nodes[0]!, serverName(1)];
    const acknowledged: Array<{ id: string; node: string | null }> = [];
    /** Answers to requests sent once the victim was dead: status and the node that served. */
    const afterKill: Array<{ status: number; node: string | null; text: string }> = [];
    let killed = false;
    let stop = false;
    // Two clients submitting back to back through HAProxy, before, during and after the kill.
    const client = async () => {
      while (!stop) {
        const sentAfterKill = killed;
        const res = await fetch(`${d.lb.url}/api/v2/jobs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ workflow: imageGraph("ack") }),
        }).then(
          async (r) => ({ status: r.status, node: r.headers.get("x-lb-server"), text: await r.text() }),
          (err: Error) => ({ status: 0, node: null, text: err.message }),
        );
        if (res.status === 201) acknowledged.push({ id: JSON.parse(res.text).id, node: res.node });
        if (sentAfterKill) afterKill.push(res);
      }
    };
    const clients = [client(), client()];
    try {
      const count = (node: string) => acknowledged.filter((a) => a.node === node).length;
      await waitFor(
        () => acknowledged,
        () => count(serverName(0)) >= 5 && count(other) >= 5,
        "acknowledged jobs from both nodes",
        20_000,
      );
      victim.child.kill("SIGKILL");
      await victim.exited;
      killed = true;
      await waitFor(
        () => afterKill.length,
        (n) => n >= 20,
        "requests after the kill",
        20_000,
      );
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    expect(afterKill.filter((a) => a.status !== 201 || a.node !== other)).toEqual([]);
    // A GET through HAProxy is served too (by the survivor), whichever job it asks for.
    for (let i = 0; i < 4; i++) {
      const res = await d.api.get(`/api/v2/jobs/${acknowledged[i]!.id}`);
      expect([res.status, res.headers.get("x-lb-server")]).toEqual([200, other]);
    }

    const ids = acknowledged.map((a) => a.id);
    expect((await rows(d, ids)).length).toBe(ids.length); // every 201 was durable
    const ended = await waitFor(
      () => rows(d, ids),
      (r) => r.every((x) => TERMINAL.includes(String(x.status))),
      "every acknowledged job ended",
      30_000,
    );
    for (const r of ended) {
      expect(r.status, String(r.id)).toBe("succeeded");
      expect(d.workerOf(r.worker_id), String(r.worker_id)).toBeGreaterThanOrEqual(0); // run by a worker
    }
  });

  it("a stream opened on node A, and one through HAProxy, follow a job submitted on node B and run by a worker: status, progress, previews, outputs, to the end", async () => {
    const d = await deploy({ workers: 0 }); // the worker comes once the streams are open
    const [a, b] = d.nodes as [Deployment["nodes"][0], Deployment["nodes"][0]];
    const job = await b.api.submit(samplerGraph(6, "lb"));
    const streams = [new SseClient(`${a.api.base}/api/v2/jobs/${job.id}/events`), new SseClient(`${d.lb.url}/api/v2/jobs/${job.id}/events`)];
    try {
      for (const s of streams) await s.waitUntil((c) => c.of("status").length >= 1, "the greeting");
      await d.addWorker();
      for (const s of streams) {
        await s.done; // the terminal status ends the stream
        const kinds = s.events.map((e) => (e.event === "status" ? `status:${e.json.status}` : e.event));
        expect(kinds[0]).toBe("status:queued");
        expect(kinds.at(-1)).toBe("status:succeeded");
        const running = kinds.indexOf("status:running");
        expect(running, kinds.join(",")).toBeGreaterThan(0);
        for (const kind of ["progress", "preview", "output"]) expect(kinds.indexOf(kind), `${kind} in ${kinds.join(",")}`).toBeGreaterThan(running);
        expect(new Set(s.of("status").map((e) => e.json.status)).size).toBe(s.of("status").length); // each change once
        // The output's link, signed by the worker, is served through HAProxy by either node (shared key and blobs).
        for (let i = 0; i < 2; i++) expect((await fetch(new URL(s.of("output")[0]!.json.url, d.lb.url))).status).toBe(200);
      }
      expect(d.workerOf((await d.row(job.id))!.worker_id)).toBe(0);
    } finally {
      for (const s of streams) s.close();
    }
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
