// An API node whose database listener drops while a worker runs its followers' jobs: the job ends
// committed in the gap (canceled through another API node) are not heard, so once it listens again it reads back every job an SSE
// stream or hosted socket follows and tells what changed. No stream is left on keep-alives.
// Real processes: an API node behind a TCP proxy of the test's own, a worker on the database.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { delayedImageGraph } from "../fixtures/graphs.ts";
import { deploymentPerTest } from "./deployment.ts";
import { postgresUnavailable } from "../postgres/pg.ts";
import { SseClient, waitFor } from "../server/helpers.ts";

const unavailable = await postgresUnavailable();
const TERMINAL = ["succeeded", "failed", "canceled"];

const d = deploymentPerTest(unavailable);

describe.skipIf(unavailable !== null)("the API node's listener drops", () => {
  it("jobs that end while it is down reach their open streams and hosted sockets once it listens again", async () => {
    const { proxy, url } = await d.proxied();
    const { api, server } = await d.apiNode({ leaseMs: 30_000, url });
    // A second API node, on the database directly: it cancels the jobs while the first is cut off.
    const { api: other } = await d.apiNode({ leaseMs: 30_000 });
    await d.worker({ leaseMs: 30_000, flags: ["--concurrency", "3"] });

    const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/ws?clientId=${randomUUID()}`);
    const messages: Array<{ type: string; data: { prompt_id?: string } }> = [];
    ws.addEventListener("message", (m) => typeof m.data === "string" && messages.push(JSON.parse(m.data)));
    await new Promise((resolve, reject) => {
      ws.addEventListener("open", resolve);
      ws.addEventListener("error", reject);
    });

    const jobs: Array<{ id: string }> = [];
    // Long runs: they end only when the test cancels them, in the gap.
    for (let i = 0; i < 3; i++) jobs.push(await api.submit(delayedImageGraph(600, `gap${i}`)));
    const streams = jobs.map((j) => new SseClient(`${server.url}/api/v2/jobs/${j.id}/events`));
    for (const [i, job] of jobs.entries()) {
      await d.waitForJob(job.id, (r) => r.status === "running", "running");
      await streams[i]!.waitUntil((c) => c.of("status").some((e) => e.json?.status === "running"), "the stream hears the start");
    }
    await waitFor(
      () => messages.filter((m) => m.type === "execution_start").length,
      (n) => n === jobs.length,
      "the socket hears every start",
    );

    proxy.cut(); // the API node's connections, its listener among them, go down
    for (const job of jobs) expect((await other.post(`/api/v2/jobs/${job.id}/cancel`)).status).toBe(200);
    for (const job of jobs) await d.waitForJob(job.id, (r) => TERMINAL.includes(r.status as string), "the job ended in the gap");
    proxy.heal();

    for (const [i, job] of jobs.entries()) {
      const stream = streams[i]!;
      await stream.waitUntil((c) => c.ended, "the stream told the end and closed", 20_000);
      expect(stream.of("status").at(-1)?.json?.status).toBe((await d.job(job.id)).status);
    }
    await waitFor(
      () => messages.filter((m) => ["execution_success", "execution_error", "execution_interrupted"].includes(m.type)).map((m) => m.data.prompt_id),
      (ids) => jobs.every((j) => ids.includes(j.id)),
      "the socket hears every end",
      20_000,
    );
    ws.close();
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
