// Worker of the cross-connection idempotency race: opens its own connection to the shared
// database (SQLite file or PostgreSQL schema), waits at a barrier with the other workers, then submits with the same key.
import { randomUUID } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import { IdempotencyKeyReused, openStore, type StoreOptions } from "../../src/store/index.ts";

const { options, barrier, attempts, key, now } = workerData as {
  options: StoreOptions;
  barrier: SharedArrayBuffer;
  attempts: number;
  key: string;
  now: number;
};

const store = await openStore(options.kind === "postgres" ? options : { ...options, busyTimeoutMs: 20_000 });
const gate = new Int32Array(barrier);
Atomics.add(gate, 0, 1);
while (Atomics.load(gate, 1) === 0) Atomics.wait(gate, 1, 0, 50);

const created: string[] = [];
let reused = 0;
for (let i = 0; i < attempts; i++) {
  try {
    const job = await store.createJob(
      { id: randomUUID(), owner: "racer", created_at: now, expires_at: now + 1000, workflow: { i }, output_node_ids: [] },
      { idempotency: { key, now } },
    );
    created.push(job.id);
  } catch (error) {
    if (!(error instanceof IdempotencyKeyReused)) throw error;
    reused++;
  }
}
await store.close();
parentPort!.postMessage({ created, reused });
