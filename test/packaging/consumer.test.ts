// Another project's view of flowgate: both packages are packed (`npm pack`, whose prepack builds
// them) and installed from their tarballs into empty projects, as a user would install them from a
// registry. The client is installed alone, imported from plain Node ESM, type-checked with
// moduleResolution nodenext, and used against a server that the installed `flowgate` bin starts;
// that bin also runs an example, the conformance suite and an admin command. Installing needs the
// npm registry for the dependencies (the npm cache is preferred).
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, ROOT, type CliProcess } from "../cli/cli.ts";

/** Dependencies of the server that the client package must never bring along. */
const SERVER_ONLY = ["fastify", "@fastify/multipart", "sharp", "pino", "ajv", "yaml", "flowgate"];

/** What the client tarball may hold: the client, its wire helpers and the generated client code. */
const CLIENT_FILES =
  /^(package\.json|README\.md|dist\/src\/(index|client\/[\w-]+|domain\/(blake3|version)|wire\/[\w-]+)\.(js|d\.ts)|dist\/generated\/(openapi-types|asyncapi-types|enums|fetch-client|sdk\/[\w/.-]+)\.(js|d\.ts))$/;

const work = mkdtempSync(path.join(tmpdir(), "flowgate-consumer-"));
/** PATH with this test's Node first, for npm and for the installed bins' `#!/usr/bin/env node`. */
const PATH = `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ""}`;
/** A consumer's environment: none of the npm_* settings of the `npm test` that runs this file. */
const ENV = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("npm_") && !k.startsWith("FLOWGATE_"))), PATH };

function run(command: string, args: string[], cwd: string): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, { cwd, env: ENV, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} (in ${cwd}) exited ${result.status}\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** Runs `npm pack` in `dir` (its prepack builds the package) and returns the tarball and its file list. */
function pack(dir: string): Promise<{ tarball: string; files: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["pack", "--json", "--pack-destination", work], { cwd: dir, env: ENV, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`npm pack in ${dir} exited ${code}\n${err}`));
      // The build's own output precedes the JSON report on stdout.
      const [report] = JSON.parse(out.slice(out.indexOf("[\n"))) as Array<{ filename: string; files: Array<{ path: string }> }>;
      resolve({ tarball: path.join(work, report!.filename), files: report!.files.map((f) => f.path) });
    });
  });
}

/** An empty project with the given tarballs installed. */
function project(name: string, tarballs: string[]): string {
  const dir = path.join(work, name);
  mkdirSync(dir);
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: `consumer-${name}`, private: true, type: "module" }));
  run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", ...tarballs], dir);
  return dir;
}

/** Installed package names under a node_modules folder (scoped ones as @scope/name). */
function installed(nodeModules: string): string[] {
  return readdirSync(nodeModules)
    .filter((name) => !name.startsWith("."))
    .flatMap((name) => (name.startsWith("@") ? readdirSync(path.join(nodeModules, name)).map((sub) => `${name}/${sub}`) : [name]));
}

/** The version in a package.json of this repository (`.` the server package, `packages/client` the client). */
function manifestVersion(dir: string): string {
  return (JSON.parse(readFileSync(path.join(ROOT, dir, "package.json"), "utf8")) as { version: string }).version;
}

function bytesUnder(dir: string): number {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .reduce((sum, e) => sum + statSync(path.join(e.parentPath, e.name)).size, 0);
}

let client: { tarball: string; files: string[] };
let clientProject: string;
let serverProject: string;
let server: CliProcess | undefined;
let baseUrl: string;

/** The checkout's package.json before the packs (prepack sets a copy without development scripts aside for the tarball). */
const CHECKOUT_MANIFEST = readFileSync(path.join(ROOT, "package.json"), "utf8");

beforeAll(async () => {
  const [serverPack, clientPack] = await Promise.all([pack(ROOT), pack(path.join(ROOT, "packages", "client"))]);
  client = clientPack;
  clientProject = project("client", [clientPack.tarball]);
  serverProject = project("server", [serverPack.tarball]);
  const bin = path.join(serverProject, "node_modules", ".bin", "flowgate");
  server = startCliAt(bin, ["serve", "--port", "0", "--data-dir", path.join(work, "data")]);
  baseUrl = await eventually(() => /listening on (http:\/\/\S+)/.exec(server!.stdout())?.[1], "the installed server's URL", 30_000);
}, 240_000);

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  rmSync(work, { recursive: true, force: true });
});

/** Starts an installed bin directly, as a shell would (its shebang picks `node` from PATH). */
function startCliAt(bin: string, args: string[]): CliProcess {
  const child = spawn(bin, args, { cwd: serverProject, env: ENV, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

async function flowgate(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return startCliAt(path.join(serverProject, "node_modules", ".bin", "flowgate"), args).exited;
}

describe("the client package, installed alone", () => {
  it("holds only the client and the generated client code", () => {
    expect(client.files.filter((f) => !CLIENT_FILES.test(f))).toEqual([]);
    expect(client.files).toContain("dist/src/index.d.ts");
  });

  it("brings none of the server's dependencies", () => {
    const names = installed(path.join(clientProject, "node_modules"));
    expect(names).toContain("@flowgate/client");
    expect(names.filter((n) => SERVER_ONLY.includes(n))).toEqual([]);
    // docs/packages.md states these figures: keep them in step when they change.
    console.log(
      `@flowgate/client installed: ${names.length - 1} dependencies (${names.filter((n) => n !== "@flowgate/client").join(", ")}), ${(bytesUnder(path.join(clientProject, "node_modules")) / 1e6).toFixed(1)} MB`,
    );
    expect(names.length - 1).toBeLessThanOrEqual(8);
  });

  it("imports from plain Node ESM and runs a job on the installed server", () => {
    const script = path.join(clientProject, "smoke.mjs");
    writeFileSync(
      script,
      `import { FlowgateClient, HostedClient, isTerminalStatus, VERSION } from "@flowgate/client";
import { createJob } from "@flowgate/client/sdk";
import { createFetchClient } from "@flowgate/client/fetch-client";
const client = new FlowgateClient({ baseUrl: process.argv[2] });
const job = await client.submit({
  "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 255 } },
  "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "consumer" } },
});
const done = await client.wait(job);
const health = await createFetchClient({ baseUrl: process.argv[2] }).GET("/healthz");
console.log(JSON.stringify({ status: done.status, terminal: isTerminalStatus(done.status), outputs: done.outputs.length,
  hosted: typeof HostedClient, sdk: typeof createJob, health: health.response.status, version: VERSION }));
`,
    );
    const out = JSON.parse(run(process.execPath, [script, baseUrl], clientProject).stdout) as Record<string, unknown>;
    expect(out).toEqual({
      status: "succeeded",
      terminal: true,
      outputs: 1,
      hosted: "function",
      sdk: "function",
      health: 200,
      version: manifestVersion("packages/client"),
    });
  }, 60_000);

  it("type-checks a TypeScript consumer with moduleResolution nodenext", () => {
    writeFileSync(
      path.join(clientProject, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2023",
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ["node"],
          typeRoots: [path.join(ROOT, "node_modules", "@types")],
        },
        files: ["consumer.ts"],
      }),
    );
    writeFileSync(
      path.join(clientProject, "consumer.ts"),
      `import { FlowgateClient, type Job, type JobStatus } from "@flowgate/client";
import { getJob } from "@flowgate/client/sdk";
import type { paths } from "@flowgate/client/openapi-types";
import type { SseStatus } from "@flowgate/client/asyncapi-types";

export async function statusOf(client: FlowgateClient, id: string): Promise<JobStatus> {
  const job: Job = await client.get(id);
  return job.status;
}
export type JobPath = keyof paths;
export const path: JobPath = "/api/v2/jobs/{id}";
export type StatusEvent = SseStatus;
export const fetchJob = (id: string) => getJob({ path: { id } });
// @ts-expect-error: not a status of the contract, so the types are real and not any
export const wrong: JobStatus = "exploded";
`,
    );
    const tsc = spawnSync(process.execPath, [path.join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", clientProject], { encoding: "utf8", env: ENV });
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
  }, 120_000);
  it("type-checks a TypeScript consumer without @types/node (a browser or edge project)", () => {
    const dir = path.join(clientProject, "no-node-types");
    mkdirSync(dir);
    writeFileSync(
      path.join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2023",
          lib: ["es2023", "dom"],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: [],
          typeRoots: [],
        },
        files: ["consumer.ts"],
      }),
    );
    writeFileSync(
      path.join(dir, "consumer.ts"),
      `import { FlowgateClient, HostedClient, type Job, type HostedSocketEvent } from "@flowgate/client";
import { getJob } from "@flowgate/client/sdk";
import { createFetchClient } from "@flowgate/client/fetch-client";
import type { paths } from "@flowgate/client/openapi-types";
import type { SseStatus } from "@flowgate/client/asyncapi-types";

export const client = new FlowgateClient({ baseUrl: "https://flowgate.example" });
export const hosted = HostedClient;
export const api = createFetchClient({ baseUrl: "https://flowgate.example" });
export const fetchJob = (id: string) => getJob({ path: { id } });
export type Parts = [Job, HostedSocketEvent, keyof paths, SseStatus];
`,
    );
    const tsc = spawnSync(process.execPath, [path.join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", dir], { encoding: "utf8", env: ENV });
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
  }, 120_000);
});

describe("the server package, installed", () => {
  it("carries no development lifecycle script (prepare builds the UI with vite in a checkout), and the checkout's package.json is as it was", () => {
    const manifest = JSON.parse(readFileSync(path.join(serverProject, "node_modules", "flowgate", "package.json"), "utf8")) as {
      scripts?: Record<string, string>;
    };
    for (const script of ["prepare", "prepack", "postpack"]) expect(manifest.scripts?.[script], script).toBeUndefined();
    expect(manifest.scripts?.start).toBeDefined();
    expect(readFileSync(path.join(ROOT, "package.json"), "utf8")).toBe(CHECKOUT_MANIFEST);
    expect(existsSync(path.join(ROOT, ".package.json.packing"))).toBe(false);
  });

  it("ships the spec, the examples and the conformance suite's graph files, and no TypeScript sources", () => {
    const pkg = path.join(serverProject, "node_modules", "flowgate");
    const files = [
      "spec/openapi.yaml",
      "spec/asyncapi.yaml",
      "examples/image-pipeline.json",
      "deploy/grafana/flowgate.json",
      "deploy/prometheus/alerts.yml",
      "dist/src/cli/main.js",
      "dist/generated/validators.js",
      "dist/conformance/workflows/comfyui-slow.json",
    ];
    for (const file of files) {
      expect(existsSync(path.join(pkg, file)), file).toBe(true);
    }
    expect(existsSync(path.join(pkg, "src"))).toBe(false);
  });

  it("flowgate run runs an example on the server that flowgate serve started", async () => {
    const pkg = path.join(serverProject, "node_modules", "flowgate");
    const out = path.join(work, "out");
    const result = await startCliAt(path.join(serverProject, "node_modules", ".bin", "flowgate"), [
      "run",
      path.join(pkg, "examples", "image-pipeline.json"),
      "--input",
      `image=${path.join(pkg, "examples", "inputs", "gradient.png")}`,
      "--out",
      out,
      "--base-url",
      baseUrl,
    ]).exited;
    expect(result.stderr + result.stdout).toMatch(/succeeded/);
    expect(result.code).toBe(0);
    const files = readdirSync(out);
    expect(files).toHaveLength(1);
    expect(readFileSync(path.join(out, files[0]!)).subarray(1, 4).toString()).toBe("PNG");
  }, 60_000);

  it("flowgate conformance checks the server and writes its reports", async () => {
    const json = path.join(work, "report.json");
    const junit = path.join(work, "report.xml");
    const result = await flowgate(
      "conformance",
      "--base-url",
      baseUrl,
      "--only",
      "VER,SUB,ERR",
      "--oversize-mb",
      "1",
      "--quiet",
      "--report-json",
      json,
      "--junit",
      junit,
    );
    expect(result.stdout + result.stderr).toMatch(/PASS/);
    expect(result.code).toBe(0);
    expect(readFileSync(json, "utf8")).toContain("SUB-");
    expect(readFileSync(junit, "utf8")).toContain("<testsuite");
  }, 60_000);

  it("the admin commands work on a data directory", async () => {
    const result = await flowgate("keys", "create", "--account", "acme", "--credits", "5", "--data-dir", path.join(work, "admin-data"));
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/fg_[\w-]+/);
  });

  it("reports the version of its package.json (system_stats, the package's VERSION)", async () => {
    const stats = (await (await fetch(`${baseUrl}/api/system_stats`)).json()) as { system: { comfyui_version: string } };
    expect(stats.system.comfyui_version).toBe(`flowgate ${manifestVersion(".")}`);
    const out = run(process.execPath, ["--input-type=module", "-e", `import("flowgate").then((m) => console.log(m.VERSION))`], serverProject).stdout;
    expect(out.trim()).toBe(manifestVersion("."));
  });

  it("the package root exports the clients too", () => {
    const out = run(
      process.execPath,
      ["--input-type=module", "-e", `import("flowgate").then((m) => console.log(typeof m.FlowgateClient))`],
      serverProject,
    ).stdout;
    expect(out.trim()).toBe("function");
  });
});
