// The hosted queue endpoints with more pending jobs than one store page: the running job, the
// front of the queue and the counts must not depend on how many jobs wait behind them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { QUEUE_PENDING_LIMIT } from "../../src/server/hosted/handlers.ts";
import { ComfyClient } from "./comfy-client.ts";
import { startTestServer, until, type TestServer } from "./hosted-server.ts";
import { queueCalls } from "./queue-calls.ts";

const KEY = "test-key-0123456789";
const PENDING = QUEUE_PENDING_LIMIT + 5;
let server: TestServer;

const { api, queuePrompt, status, remaining } = queueCalls(() => server, KEY);

/** queue_remaining of the socket's latest status message. */
function socketRemaining(client: ComfyClient): number | undefined {
  const last = client.messages.filter((m) => m.type === "status").at(-1) as { data: { status: { exec_info: { queue_remaining: number } } } } | undefined;
  return last?.data.status.exec_info.queue_remaining;
}

beforeAll(async () => {
  server = await startTestServer(["--token", KEY, "--concurrency", "1"]);
});
afterAll(async () => {
  await server.stop();
});

describe("a queue deeper than one page", () => {
  it("HOST-7/HOST-8/WS-3: the queue shows the running job and the front of the queue; clear and interrupt reach every job", async () => {
    const running = await queuePrompt("slow", 60);
    await until(async () => ((await status(running)) === "executing" ? true : undefined));
    const pending: string[] = [];
    for (let i = 0; i < PENDING; i += 50) {
      const ids = await Promise.all(Array.from({ length: Math.min(50, PENDING - i) }, (_, k) => queuePrompt(`p${i + k}`)));
      pending.push(...ids);
    }

    expect(await remaining()).toBe(PENDING + 1);
    // A socket opened now is told the whole count, and follows it from there.
    const client = new ComfyClient(server.url, KEY);
    await client.connect();
    try {
      await until(async () => (socketRemaining(client) === PENDING + 1 ? true : undefined));
      const extra = await queuePrompt("one more");
      await until(async () => (socketRemaining(client) === PENDING + 2 ? true : undefined));
      expect((await api("/queue", { delete: [extra] })).status).toBe(200);
      await until(async () => (socketRemaining(client) === PENDING + 1 ? true : undefined));
    } finally {
      client.close();
    }
    const queue = (await (await api("/queue")).json()) as { queue_running: unknown[][]; queue_pending: unknown[][] };
    expect(v.schema_HostedQueue(queue)).toBe(true);
    expect(queue.queue_running.map((e) => e[1])).toEqual([running]);
    // Submitted in batches, so the order within a batch is the store's: compare as sets per window.
    const listed = queue.queue_pending.map((e) => e[1] as string);
    expect(listed).toHaveLength(QUEUE_PENDING_LIMIT);
    expect(new Set(listed)).toEqual(new Set(pending.slice(0, QUEUE_PENDING_LIMIT)));
    const numbers = queue.queue_pending.map((e) => e[0] as number);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));

    // The cancels of a clear run side by side, so that their commits share fsyncs.
    const store = server.runtime.store;
    const transition = store.transitionJob.bind(store);
    let inFlight = 0;
    let mostInFlight = 0;
    store.transitionJob = async (...args) => {
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      try {
        return await transition(...args);
      } finally {
        inFlight--;
      }
    };
    try {
      expect((await api("/queue", { clear: true })).status).toBe(200);
    } finally {
      store.transitionJob = transition;
    }
    expect(mostInFlight).toBeGreaterThan(1);
    expect(await remaining()).toBe(1);
    for (const id of [pending[0]!, pending[PENDING - 1]!]) expect(await status(id)).toBe("cancelled");

    expect((await api("/interrupt", {})).status).toBe(200);
    await until(async () => ((await status(running)) === "cancelled" ? true : undefined));
    expect(await remaining()).toBe(0);
  });
  it("HOST-7: a delete skips ids it does not know, and a store that fails it answers an error, not 200", async () => {
    const running = await queuePrompt("slow-2", 60);
    await until(async () => ((await status(running)) === "executing" ? true : undefined));
    const pending = await queuePrompt("waiting");
    const store = server.runtime.store;
    const transition = store.transitionJob.bind(store);
    store.transitionJob = async (...args) => {
      if (args[0] === pending) throw Object.assign(new Error("disk I/O error"), { code: "ERR_SQLITE_ERROR", errcode: 10 });
      return transition(...args);
    };
    try {
      const failed = await api("/queue", { delete: ["not-a-prompt", pending] });
      expect(failed.status).toBeGreaterThanOrEqual(500);
      expect(v.schema_HostedError(await failed.json())).toBe(true);
    } finally {
      store.transitionJob = transition;
    }
    expect(await status(pending)).not.toBe("cancelled");
    expect((await api("/queue", { delete: ["not-a-prompt", pending] })).status).toBe(200);
    expect(await status(pending)).toBe("cancelled");
    expect((await api("/interrupt", {})).status).toBe(200);
    await until(async () => ((await status(running)) === "cancelled" ? true : undefined));
  });
});
