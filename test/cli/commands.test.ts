// status, cancel, list, conformance, mock and --help everywhere; settings from flags or the
// environment (FLOWGATE_BASE_URL, FLOWGATE_TOKEN).
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mockLaunch, runConformance } from "../../src/cli/delegates.ts";
import { FlowgateClient, type Job } from "../../src/index.ts";
import { delayGraph, imageGraph, startTestServer, waitFor, type TestServer } from "../client/fixtures.ts";
import { eventually, ROOT, runCli, startCli } from "./cli.ts";

const TOKEN = "cli-token";
let server: TestServer;
let client: FlowgateClient;
let done: Job;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer(["--token", TOKEN]);
  client = new FlowgateClient({ baseUrl: server.url, token: TOKEN });
  done = await client.wait(await client.submit(imageGraph("cli")));
  env = { FLOWGATE_BASE_URL: server.url, FLOWGATE_TOKEN: TOKEN };
});
afterAll(async () => {
  await server?.stop();
});

describe("--help", () => {
  it("every command answers --help with its usage and exit 0", async () => {
    const top = await runCli(["--help"]);
    expect(top.code).toBe(0);
    for (const command of ["serve", "run", "status", "cancel", "list", "conformance", "mock"]) {
      expect(top.stdout).toContain(`  ${command} `);
      const r = await runCli([command, "--help"]);
      expect(r.code, `${command}: ${r.stderr}`).toBe(0);
      expect(r.stdout, command).toContain(`Usage: flowgate ${command}`);
    }
  });

  it("client commands document their environment variables", async () => {
    const r = await runCli(["status", "--help"]);
    expect(r.stdout).toContain("[env FLOWGATE_BASE_URL]");
    expect(r.stdout).toContain("[env FLOWGATE_TOKEN]");
  });
});

describe("status, cancel, list", () => {
  it("status shows a job as text, and as the job's JSON with --json", async () => {
    const text = await runCli(["status", done.id], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`job ${done.id}`);
    expect(text.stdout).toMatch(/status\s+succeeded/);
    expect(text.stdout).toContain(done.outputs[0]!.name);
    const json = await runCli(["status", done.id, "--json"], env);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: done.id, status: "succeeded" });
  });

  it("status of an unknown job exits 1, saying what a 404 can mean", async () => {
    const id = crypto.randomUUID();
    const r = await runCli(["status", id], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no job ${id} at ${server.url} (not_found, HTTP 404)`);
    expect(r.stderr).toContain("expires_at");
    expect(r.stderr).toContain("another caller");
  });

  it("cancel cancels a running job", async () => {
    const job = await client.submit(delayGraph(30));
    await waitFor(
      () => client.get(job.id),
      (j) => j.status === "running",
      "running",
    );
    const r = await runCli(["cancel", job.id], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`job ${job.id} (canceling|canceled)`));
    await waitFor(
      () => client.get(job.id),
      (j) => j.status === "canceled",
      "canceled",
    );
  });

  it("list shows the caller's jobs, filters by status, and pages", async () => {
    const r = await runCli(["list", "--limit", "100"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(done.id);
    const json = JSON.parse((await runCli(["list", "--status", "succeeded", "--json"], env)).stdout) as { jobs: Job[] };
    expect(json.jobs.length).toBeGreaterThan(0);
    expect(json.jobs.every((j) => j.status === "succeeded")).toBe(true);
    await client.submit(imageGraph());
    await client.submit(imageGraph(), { metadata: { batch: "hint" } });
    await client.wait(await client.submit(imageGraph(), { metadata: { batch: "hint" } }));
    // The hint keeps the filters and the page size: followed literally, it lists the next page of the same listing.
    const first = await runCli(["list", "--limit", "1", "--label", "batch=hint"], env);
    const hint = /^more: (npx )?flowgate (list .*)$/m.exec(first.stdout);
    expect(hint, first.stdout).not.toBeNull();
    expect(hint![2]).toMatch(/^list --label batch=hint --limit 1 --cursor \S+$/);
    const next = await runCli(hint![2]!.split(" "), env);
    expect(next.code, next.stderr).toBe(0);
    const rows = (out: string) => out.split("\n").filter((l) => /^[0-9a-f-]{36} /.test(l));
    expect(rows(next.stdout)).toHaveLength(1);
    expect(rows(next.stdout)[0]).toContain("batch=hint");
    expect(rows(next.stdout)[0]).not.toBe(rows(first.stdout)[0]);
    expect((await runCli(["list", "--limit", "0"], env)).code).toBe(2);
  });

  it("run --label stores labels; list --label filters by them (the v2 client carries both)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "flowgate-labels-"));
    try {
      const graph = join(dir, "graph.json");
      await writeFile(graph, JSON.stringify(imageGraph("labels")));
      const tag = `t${Date.now()}`;
      const r = await runCli(["run", graph, "--label", `batch=${tag}`, "--label", "kind=a=b", "--no-download", "--json"], env);
      expect(r.code, r.stderr).toBe(0);
      const viaClient = await client.submit(imageGraph(), { metadata: { batch: tag } });
      expect(viaClient.metadata).toEqual({ batch: tag });
      const listed = JSON.parse((await runCli(["list", "--label", `batch=${tag}`, "--label", "kind=a=b", "--json"], env)).stdout) as { jobs: Job[] };
      expect(listed.jobs).toHaveLength(1);
      expect(listed.jobs[0]!.metadata).toEqual({ batch: tag, kind: "a=b" });
      const text = await runCli(["list", "--label", `batch=${tag}`], env);
      expect(text.stdout).toContain(viaClient.id);
      expect(text.stdout).toContain(`batch=${tag}`);
      expect((await client.list({ metadata: { batch: tag } })).jobs.map((j) => j.id)).toContain(viaClient.id);
      expect((await client.list({ metadata: { batch: tag, kind: "a=b" } })).jobs).toHaveLength(1);
      expect((await runCli(["list", "--label", "novalue"], env)).code).toBe(2);
      const bad = await runCli(["list", "--label", "bad key=x"], env);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain("invalid_metadata_filter");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("takes the token from --token or FLOWGATE_TOKEN, and says unauthorized without it", async () => {
    const none = await runCli(["list"], { FLOWGATE_BASE_URL: server.url });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("unauthorized (HTTP 401)");
    const flag = await runCli(["list", "--token", TOKEN], { FLOWGATE_BASE_URL: server.url });
    expect(flag.code, flag.stderr).toBe(0);
  });
});

describe("conformance", () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "flowgate-conformance-"));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("explains that the suite is missing when conformance/cli.ts is absent", async () => {
    const writes: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((text: string) => writes.push(text) > 0) as unknown as typeof process.stderr.write;
    try {
      expect(await runConformance(["--base-url", "http://x"], join(root, "empty"))).toBe(1);
    } finally {
      process.stderr.write = write;
    }
    expect(writes.join("")).toContain("conformance/cli.ts is missing");
  });

  it("calls the suite's exported main with every argument and returns its exit code", async () => {
    await mkdir(join(root, "suite", "conformance"), { recursive: true });
    await writeFile(
      join(root, "suite", "conformance", "cli.ts"),
      "export async function main(argv: string[]) { (globalThis as any).__conformanceArgs = argv; return 3; }\n",
    );
    expect(await runConformance(["--base-url", "http://x", "--surface", "self-hosted"], join(root, "suite"))).toBe(3);
    expect((globalThis as { __conformanceArgs?: string[] }).__conformanceArgs).toEqual(["--base-url", "http://x", "--surface", "self-hosted"]);
  });

  it("flowgate conformance reaches the suite of this checkout", async () => {
    const r = await runCli(["conformance", "--help"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Usage: flowgate conformance");
  });
});

describe("mock", () => {
  it("runs scripts/mock.ts in a checkout, and Prism through npx on the package's spec where the package is installed", async () => {
    const inCheckout = mockLaunch(["--port", "4011"], ROOT);
    expect(inCheckout.args.slice(-3)).toEqual([`${ROOT}scripts/mock.ts`, "--port", "4011"]);
    expect(inCheckout.note).toBeNull();
    // An installed package: dist/ beside spec/, no scripts/.
    const pkg = await mkdtemp(join(tmpdir(), "flowgate-installed-"));
    try {
      await mkdir(join(pkg, "dist"));
      await mkdir(join(pkg, "spec"));
      await writeFile(join(pkg, "spec/openapi.yaml"), "openapi: 3.1.0\n");
      const installed = mockLaunch(["--port", "4012", "--dynamic"], join(pkg, "dist"));
      expect(installed.command).toBe("npx");
      expect(installed.args).toEqual([
        "--yes",
        "@stoplight/prism-cli@5",
        "mock",
        `${pkg}/dist/../spec/openapi.yaml`,
        "--port",
        "4012",
        "--host",
        "127.0.0.1",
        "--dynamic",
      ]);
      expect(installed.note).toContain("fetched by npx");
    } finally {
      await rm(pkg, { recursive: true, force: true });
    }
  });

  it("starts the Prism mock of the spec on the port asked for", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const cli = startCli(["mock", "--port", String(port)]);
    try {
      const body = await eventually(
        async () => {
          const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null);
          return res?.ok ? await res.json() : undefined;
        },
        "the mock to answer",
        60_000,
      );
      expect(body).toEqual({ status: "ok" });
    } finally {
      cli.child.kill("SIGTERM");
      await cli.exited;
    }
  }, 90_000);
});
