// Real flowgate processes on one PostgreSQL schema for the fault tests: API nodes (`flowgate serve
// --no-dispatch`) and workers (`flowgate worker`), each optionally behind a TcpProxy of its own,
// a shared blob directory, short leases; the status and output history recorded (history.ts).
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import { startCli, type CliProcess } from "../cli/cli.ts";
import { adminQuery, createTestSchema, dropTestSchema, schemaUrl } from "../postgres/pg.ts";
import { Api, spawnCli, waitFor, type CliServer } from "../server/helpers.ts";
import { historyViolations, recordHistory } from "./history.ts";
import { proxyTo, type TcpProxy } from "./tcp-proxy.ts";

/** One test's processes, proxies and directories; `close` ends and removes them all. */
export class FaultDeployment {
  schema = "";
  url = "";
  readonly blobDir: string;
  readonly #dirs: string[] = [];
  readonly #children: Array<{ child: CliProcess["child"] }> = [];
  readonly #proxies: TcpProxy[] = [];
  #historyOn = false;

  private constructor(blobDir: string) {
    this.blobDir = blobDir;
    this.#dirs.push(blobDir);
  }

  static async open(): Promise<FaultDeployment> {
    const d = new FaultDeployment(await mkdtemp(join(tmpdir(), "fg-fault-blobs-")));
    d.schema = await createTestSchema();
    d.url = schemaUrl(d.schema);
    return d;
  }

  /** The database URL through a new proxy of its own. */
  async proxied(): Promise<{ proxy: TcpProxy; url: string }> {
    const proxy = await proxyTo(this.url);
    this.#proxies.push(proxy);
    const u = new URL(this.url);
    u.host = `127.0.0.1:${proxy.port}`;
    return { proxy, url: u.toString() };
  }

  async #flags(url: string, leaseMs: number): Promise<string[]> {
    const dataDir = await mkdtemp(join(tmpdir(), "fg-fault-data-"));
    this.#dirs.push(dataDir);
    return ["--database-url", url, "--data-dir", dataDir, "--blob-dir", this.blobDir, "--lease", `${leaseMs}ms`, "--shutdown-grace", "0"];
  }

  /** An API node; the history triggers go in once the first one migrated the schema. */
  async apiNode(options: { leaseMs: number; url?: string; flags?: string[] }): Promise<{ api: Api; server: CliServer }> {
    const server = await spawnCli([...(await this.#flags(options.url ?? this.url, options.leaseMs)), "--port", "0", "--no-dispatch", ...(options.flags ?? [])]);
    this.#children.push(server);
    if (!this.#historyOn) {
      this.#historyOn = true;
      await recordHistory(this.schema);
    }
    return { api: new Api(server.url), server };
  }

  /** A worker, once it claims jobs. */
  async worker(options: { leaseMs: number; url?: string; flags?: string[] }): Promise<CliProcess> {
    const w = startCli(["worker", ...(await this.#flags(options.url ?? this.url, options.leaseMs)), ...(options.flags ?? [])]);
    this.#children.push(w);
    await waitFor(
      () => w.stdout() + w.stderr(),
      (out) => out.includes("worker claiming jobs") || w.child.exitCode !== null,
      "worker start",
      30_000,
    );
    if (!w.stdout().includes("worker claiming jobs")) throw new Error(`worker did not start:\n${w.stdout()}${w.stderr()}`);
    return w;
  }

  /** A job's row as the database has it. */
  async job(id: string): Promise<Record<string, unknown>> {
    return (await adminQuery(`SELECT status, worker_id, lease_epoch, started_at, completed_at, error FROM ${this.schema}.jobs WHERE id = $1`, [id]))[0]!;
  }

  /** Waits until the job's row passes `until`. */
  waitForJob(id: string, until: (row: Record<string, unknown>) => boolean, what: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    return waitFor(() => this.job(id), until, what, timeoutMs);
  }

  /** Output records of a job. */
  async outputs(id: string): Promise<Array<Record<string, unknown>>> {
    return adminQuery(`SELECT id, blob_key FROM ${this.schema}.assets WHERE job_id = $1`, [id]);
  }

  /** Blob files in the shared blob directory, by key. */
  async blobKeys(): Promise<string[]> {
    const keys: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        if (entry.isDirectory()) await walk(join(dir, entry.name));
        else if (/^[0-9a-f]{64}$/.test(entry.name)) keys.push(entry.name);
      }
    };
    await walk(this.blobDir);
    return keys;
  }

  /** Breaches of the status and output rules so far. */
  violations(): Promise<string[]> {
    return historyViolations(this.schema);
  }

  async close(): Promise<void> {
    for (const { child } of this.#children) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL"); // a stopped one too
    }
    await Promise.all(
      this.#children.map(({ child }) => (child.exitCode === null && child.signalCode === null ? new Promise((r) => child.once("close", r)) : null)),
    );
    for (const proxy of this.#proxies) await proxy.close();
    if (this.schema) await dropTestSchema(this.schema);
    for (const dir of this.#dirs) await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The deployment of each test in the calling file: opened before the test, closed after it
 * (none when PostgreSQL is `unavailable`). The object returned stands for the current test's.
 */
export function deploymentPerTest(unavailable: string | null): FaultDeployment {
  let current: FaultDeployment | undefined;
  beforeEach(async () => {
    if (unavailable === null) current = await FaultDeployment.open();
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  const now = (): FaultDeployment => {
    if (current === undefined) throw new Error("no fault deployment outside a test");
    return current;
  };
  return new Proxy({} as FaultDeployment, {
    get(_, key) {
      const d = now();
      const value: unknown = Reflect.get(d, key, d);
      // Its methods reach its private fields: called on the deployment itself.
      return typeof value === "function" ? value.bind(d) : value;
    },
    set: (_, key, value) => Reflect.set(now(), key, value),
  });
}
