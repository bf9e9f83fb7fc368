// A graphile-worker runner in its own process (the peer of a `flowgate worker`), for the PostgreSQL
// scenario's dispatch figures: `node bench/lib/graphile-child.ts <spec-json>`. Runs one no-op task,
// `noop`, whose payload `{ n }` names the job; reports over IPC when each starts and succeeds
// (process.hrtime ns: CLOCK_MONOTONIC, comparable with the bench's clock on one host).
import { EventEmitter } from "node:events";
import { Logger, run, type WorkerEvents } from "graphile-worker";

export interface GraphileChildSpec {
  connectionString: string;
  schema: string;
  concurrency: number;
}

export type GraphileChildNotice = { event: "ready" } | { event: "start"; n: number; tNs: string } | { event: "success"; n: number; tNs: string };

const spec = JSON.parse(process.argv[2] ?? "{}") as GraphileChildSpec;
const send = (m: GraphileChildNotice) => process.send?.(m);
process.on("disconnect", () => process.exit(0));

const events = new EventEmitter() as WorkerEvents;
events.on("job:success", ({ job }) => send({ event: "success", n: (job.payload as { n: number }).n, tNs: process.hrtime.bigint().toString() }));
// The first LISTEN connection is up: a job added from now on is heard at once.
events.once("pool:listen:success", () => send({ event: "ready" }));

const runner = await run({
  connectionString: spec.connectionString,
  schema: spec.schema,
  concurrency: spec.concurrency,
  noHandleSignals: true,
  logger: new Logger(() => () => undefined),
  events,
  taskList: {
    noop: async (payload) => {
      send({ event: "start", n: (payload as { n: number }).n, tNs: process.hrtime.bigint().toString() });
    },
  },
});

process.on("SIGTERM", () => {
  void runner.stop().finally(() => process.exit(0));
});
