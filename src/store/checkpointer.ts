// WAL checkpoints on a worker thread. A checkpoint copies committed pages from the WAL into the
// database file and fsyncs both; run by SQLite's automatic checkpoint it would happen inside some
// COMMIT on the event loop, stalling every request for its fsyncs. Here a second connection in a
// worker runs PASSIVE checkpoints (they never block writers) on a short interval, so the WAL
// stays small and the event loop never waits for a checkpoint.
import { Worker } from "node:worker_threads";

// Plain CommonJS so that the worker needs no TypeScript loader.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { DatabaseSync } = require("node:sqlite");
const db = new DatabaseSync(workerData.path, { timeout: workerData.busyTimeoutMs });
db.exec("PRAGMA synchronous = NORMAL"); // a checkpoint syncs the WAL before and the database after
db.exec("PRAGMA wal_autocheckpoint = 0");
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
const timer = setInterval(() => {
  const result = checkpoint.get();
  parentPort.postMessage({ checkpointed: result.checkpointed, log: result.log });
}, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message !== "stop") return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** Options of the checkpoint worker. */
export interface CheckpointerOptions {
  /** The database file (in WAL mode). */
  path: string;
  /** How often to checkpoint (default 250 ms). */
  intervalMs?: number;
  busyTimeoutMs?: number;
  /** Called once if the worker fails; the caller should fall back to automatic checkpoints. */
  onFailure: (error: unknown) => void;
}

/** A worker thread that checkpoints one SQLite database's WAL. */
export class Checkpointer {
  readonly #worker: Worker;
  #stopped = false;
  /** Pages in the WAL and pages copied to the database at the last checkpoint. */
  last: { log: number; checkpointed: number } | null = null;

  private constructor(worker: Worker) {
    this.#worker = worker;
  }

  /** Starts checkpointing `options.path`. */
  static start(options: CheckpointerOptions): Checkpointer {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path: options.path, intervalMs: options.intervalMs ?? 250, busyTimeoutMs: options.busyTimeoutMs ?? 5000 },
    });
    // A store someone forgot to close must not keep the process alive.
    worker.unref();
    const checkpointer = new Checkpointer(worker);
    worker.on("message", (m: { log: number; checkpointed: number }) => (checkpointer.last = m));
    worker.once("error", (error) => {
      if (!checkpointer.#stopped) options.onFailure(error);
      checkpointer.#stopped = true;
    });
    return checkpointer;
  }

  /** Stops the worker after its current checkpoint and closes its connection. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    const exited = new Promise<void>((resolve) => this.#worker.once("exit", () => resolve()));
    this.#worker.ref(); // keep this thread alive until the worker's exit arrives
    this.#worker.postMessage("stop");
    await exited;
  }
}
