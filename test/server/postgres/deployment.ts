// A scale-out deployment as docs/postgres-and-processes.md draws it, each part a real process:
// API nodes (`flowgate serve --no-dispatch`) behind HAProxy, `flowgate worker` processes, one
// fresh PostgreSQL schema, one shared blob directory (or one bucket: `blobStore`) and signing key.
// stop() ends every child and drops the schema.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCli, type CliProcess } from "../../cli/cli.ts";
import { adminQuery, createTestSchema, dropTestSchema, schemaUrl } from "../../postgres/pg.ts";
import { Api, spawnCli, waitFor, type CliServer } from "../helpers.ts";
import { startLoadBalancer, type LoadBalancer } from "./haproxy.ts";

export interface DeploymentOptions {
  /** API nodes behind the load balancer (2). */
  nodes?: number;
  /** Worker processes (2). */
  workers?: number;
  /** Lease of a claim, in ms (1000: a dead worker is noticed fast). */
  leaseMs?: number;
  /** Flags of every API node, e.g. --surface cloud or --token. */
  nodeFlags?: string[];
  /** Flags of every worker. */
  workerFlags?: string[];
  /** Environment of every node and worker (added to this process's). */
  env?: Record<string, string>;
  /** --redis-url of every process (previews between processes), when given. */
  redisUrl?: string;
  /** Blobs in a bucket (`--blob-store`, `--s3-endpoint`) instead of the shared directory: no directory is common to any two processes. */
  blobStore?: { url: string; endpoint: string | null };
}

/** One API node: its process, its own URL (past the load balancer), requests to it. */
export interface ApiNode extends CliServer {
  api: Api;
}

export interface Deployment {
  schema: string;
  databaseUrl: string;
  blobDir: string;
  nodes: ApiNode[];
  workers: CliProcess[];
  lb: LoadBalancer;
  /** Requests through the load balancer. */
  api: Api;
  /** Starts one more worker (appended to `workers`), resolving once it claims jobs. */
  addWorker(): Promise<CliProcess>;
  /** A job's row as the database holds it. */
  row(id: string): Promise<Record<string, unknown> | undefined>;
  /** The worker (index into `workers`) whose claim a worker_id names, or -1. */
  workerOf(workerId: unknown): number;
  /** Everything each process printed, for failure messages. */
  logs(): string;
  /** SIGKILLs every child still running, waits for them, drops the schema, removes the directories. */
  stop(): Promise<void>;
}

const alive = (child: { exitCode: number | null; signalCode: NodeJS.Signals | null }) => child.exitCode === null && child.signalCode === null;

/** Starts the deployment; on any failure what started is stopped before the error is thrown. */
export async function startDeployment(options: DeploymentOptions = {}): Promise<Deployment> {
  const { nodes: nodeCount = 2, workers: workerCount = 2, leaseMs = 1000, nodeFlags = [], workerFlags = [], env = {}, redisUrl, blobStore } = options;
  const schema = await createTestSchema();
  const databaseUrl = schemaUrl(schema);
  const dirs: string[] = [];
  const tempDir = async (prefix: string) => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
  const blobDir = await tempDir("fg-lb-blobs-");
  const signingKey = randomBytes(32).toString("hex");
  const blobFlags = blobStore ? ["--blob-store", blobStore.url, ...(blobStore.endpoint ? ["--s3-endpoint", blobStore.endpoint] : [])] : ["--blob-dir", blobDir];
  const common = async () => [
    "--database-url",
    databaseUrl,
    "--data-dir",
    await tempDir("fg-lb-data-"),
    ...blobFlags,
    "--signing-key",
    signingKey,
    "--lease",
    `${leaseMs}ms`,
    "--shutdown-grace",
    "0",
    ...(redisUrl ? ["--redis-url", redisUrl] : []),
  ];

  const children: Array<{ child: CliProcess["child"] }> = [];
  const nodes: ApiNode[] = [];
  const workers: CliProcess[] = [];
  let lb: LoadBalancer | null = null;

  const addWorker = async () => {
    const w = startCli(["worker", ...(await common()), ...workerFlags], env);
    children.push(w);
    workers.push(w);
    await waitFor(
      () => w.stdout() + w.stderr(),
      (out) => out.includes("worker claiming jobs") || !alive(w.child),
      "worker start",
      30_000,
    );
    if (!w.stdout().includes("worker claiming jobs")) throw new Error(`flowgate worker did not start:\n${w.stdout()}${w.stderr()}`);
    return w;
  };

  const stop = async () => {
    await lb?.stop();
    for (const { child } of children) if (alive(child)) child.kill("SIGKILL");
    await Promise.all(children.map(({ child }) => (alive(child) ? new Promise((r) => child.once("close", r)) : null)));
    await dropTestSchema(schema);
    for (const dir of dirs) await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  };

  try {
    // Every process migrates at start (under an advisory lock), so they may all start at once.
    const starting = [
      ...Array.from({ length: nodeCount }, async () => {
        const server = await spawnCli([...(await common()), "--no-dispatch", "--port", "0", ...nodeFlags], env);
        children.push(server);
        nodes.push({ ...server, api: new Api(server.url) });
      }),
      ...Array.from({ length: workerCount }, addWorker),
    ];
    const settled = await Promise.allSettled(starting);
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    lb = await startLoadBalancer(nodes.map((n) => n.url));
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    schema,
    databaseUrl,
    blobDir,
    nodes,
    workers,
    lb,
    api: new Api(lb.url),
    addWorker,
    async row(id) {
      return (await adminQuery(`SELECT status, worker_id, started_at, completed_at, error FROM ${schema}.jobs WHERE id = $1`, [id]))[0];
    },
    workerOf(workerId) {
      return workers.findIndex((w) => typeof workerId === "string" && workerId.includes(`:${w.child.pid}:`));
    },
    logs() {
      return [
        ...nodes.map((n, i) => `--- node${i} (${n.url})\n${n.output().slice(-4000)}`),
        ...workers.map((w, i) => `--- worker${i}\n${(w.stdout() + w.stderr()).slice(-4000)}`),
        `--- haproxy\n${lb!.output().slice(-4000)}`,
      ].join("\n");
    },
    stop,
  };
}
