// GET /api/prompt and GET /api/queue when a job starts while they read: the counts must hold
// every live job once. The schedule is set at the store: the request's first read sees the queue
// before the start, and every later read of the request waits for the start and sees it after.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import type { Store } from "../../src/store/index.ts";
import { startTestServer, until, type TestServer } from "./hosted-server.ts";
import { queueCalls } from "./queue-calls.ts";

const KEY = "test-key-0123456789";
let server: TestServer;

const { api, queuePrompt, status, remaining } = queueCalls(() => server, KEY);

const READS = ["listJobs", "queuedJobs", "countQueued", "countLive"] as const;
type Read = (typeof READS)[number];

/**
 * Runs `request` with the store's queue reads scheduled around `move`: the first read runs, then
 * `move`, and every other read waits for `move` to end before it runs.
 */
async function withMoveAfterFirstRead<T>(store: Store, move: () => Promise<unknown>, request: () => Promise<T>): Promise<T> {
  const table = store as unknown as Record<Read, (...args: unknown[]) => Promise<unknown>>;
  const originals = new Map(READS.map((name) => [name, table[name].bind(store)] as const));
  let moved: Promise<unknown> | null = null;
  for (const name of READS) {
    const read = originals.get(name)!;
    table[name] = async (...args: unknown[]) => {
      if (moved) {
        await moved;
        return read(...args);
      }
      let done!: () => void;
      moved = new Promise<void>((resolve) => {
        done = resolve;
      });
      try {
        return await read(...args);
      } finally {
        await move();
        done();
      }
    };
  }
  try {
    return await request();
  } finally {
    for (const [name, read] of originals) table[name] = read;
  }
}

beforeAll(async () => {
  server = await startTestServer(["--token", KEY, "--concurrency", "1"]);
});
afterAll(async () => {
  await server.stop();
});

describe("a job that starts while the queue is read", () => {
  it("HOST-7: GET /api/prompt and GET /api/queue count it once, whichever read sees it start", async () => {
    const running = await queuePrompt("slow", 60);
    await until(async () => ((await status(running)) === "executing" ? true : undefined));
    const starting = await queuePrompt("starting");
    const waiting = await queuePrompt("waiting");
    const store = server.runtime.store;
    // The job's start as the store sees it; the dispatcher, whose slot is taken, never runs it.
    const start = () => store.transitionJob(starting, ["queued"], "running", { started_at: Date.now() });

    const info = await withMoveAfterFirstRead(store, start, async () => (await api("/prompt")).json());
    expect(info).toEqual({ exec_info: { queue_remaining: 3 } });

    await store.transitionJob(starting, ["running"], "failed", { completed_at: Date.now() });
    const next = await queuePrompt("next");
    const startNext = () => store.transitionJob(next, ["queued"], "running", { started_at: Date.now() });
    const queue = (await withMoveAfterFirstRead(store, startNext, async () => (await api("/queue")).json())) as {
      queue_running: unknown[][];
      queue_pending: unknown[][];
    };
    expect(v.schema_HostedQueue(queue)).toBe(true);
    expect(queue.queue_running.map((e) => e[1])).toEqual([running, next]);
    expect(queue.queue_pending.map((e) => e[1])).toEqual([waiting]);

    await store.transitionJob(next, ["running"], "failed", { completed_at: Date.now() });
    expect((await api("/queue", { clear: true })).status).toBe(200);
    expect((await api("/interrupt", {})).status).toBe(200);
    await until(async () => ((await remaining()) === 0 ? true : undefined));
  });
});
