// What a user meets before anything runs: --version, "did you mean", exit code 2 for every usage
// error, a quick --help that loads no server, and words for a server, database or Redis that
// does not answer (never with the URL's password).
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminQuery, dropTestSchema, postgresUnavailable, schemaUrl, testSchemaName } from "../postgres/pg.ts";
import { spawnCli } from "../server/helpers.ts";
import { BIN, eventually, ROOT, runCli } from "./cli.ts";

/** A port nothing listens on: one the OS just gave out and took back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flowgate-usage-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("--version and --help", () => {
  it("--version prints the package's version", async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { version: string };
    for (const flag of ["--version", "-V", "version"]) {
      const r = await runCli([flag]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(`flowgate ${pkg.version}\n`);
    }
  });

  it("serve --help lists the server's flags and not the worker's --health; worker --help lists --health and no API flag", async () => {
    const serve = await runCli(["serve", "--help"]);
    expect(serve.code, serve.stderr).toBe(0);
    expect(serve.stdout).toMatch(/^ {2}--port /m);
    expect(serve.stdout).not.toMatch(/--health/);
    const worker = await runCli(["worker", "--help"]);
    expect(worker.code, worker.stderr).toBe(0);
    expect(worker.stdout).toMatch(/^ {2}--health /m);
    expect(worker.stdout).not.toMatch(/--token /);
  });

  it("flowgate --help and serve --help load no server, engine or client module", async () => {
    // A module hook records every file Node loads; the help must not reach the heavy parts.
    const hook = join(dir, "hook.mjs");
    await writeFile(
      hook,
      `import { registerHooks } from "node:module";\nimport { appendFileSync } from "node:fs";\n` +
        `registerHooks({ load(url, context, next) { appendFileSync(process.env.LOADED_LOG, url + "\\n"); return next(url, context); } });\n`,
    );
    for (const args of [["--help"], ["serve", "--help"], ["--version"]]) {
      const log = join(dir, `loaded-${args.join("")}.txt`);
      const code = await new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, ["--import", hook, BIN, ...args], { cwd: ROOT, env: { ...process.env, LOADED_LOG: log }, stdio: "ignore" });
        child.on("close", resolve);
      });
      expect(code).toBe(0);
      const loaded = (await readFile(log, "utf8")).trim().split("\n");
      expect(
        loaded.some((u) => u.endsWith("/src/cli/main.ts")),
        "the hook saw the CLI",
      ).toBe(true);
      // The engine's typo distance (engine/suggest.ts, no imports) is shared with "did you mean".
      const heavy = loaded.filter(
        (u) =>
          /\/src\/(server|engine|jobs|store|client|relay|runtime)\/|\/node_modules\/(fastify|pg|sharp|openapi-fetch|@redis)\//.test(u) &&
          !u.endsWith("/src/engine/suggest.ts"),
      );
      expect(heavy, `flowgate ${args.join(" ")}`).toEqual([]);
    }
  });

  it("a server on SQLite and blobs on disk never loads the AWS SDK (it is imported only for --blob-store s3://)", async () => {
    const hook = join(dir, "hook-serve.mjs");
    await writeFile(
      hook,
      `import { registerHooks } from "node:module";\nimport { appendFileSync } from "node:fs";\n` +
        `registerHooks({ load(url, context, next) { appendFileSync(process.env.LOADED_LOG, url + "\\n"); return next(url, context); } });\n`,
    );
    const log = join(dir, "loaded-serve.txt");
    const child = spawn(process.execPath, ["--import", hook, BIN, "serve", "--port", "0", "--data-dir", join(dir, "lazy-s3")], {
      cwd: ROOT,
      env: { ...process.env, LOADED_LOG: log },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    const closed = new Promise((resolve) => child.on("close", resolve));
    const url = await eventually(() => /listening on (http:\S+)/.exec(out)?.[1], "the server listening");
    // A job runs, so its outputs reach the blob store: still no SDK.
    const job = (await (
      await fetch(`${url}/api/v2/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          workflow: {
            "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: Math.floor(Math.random() * 0xffffff) } },
            "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "lazy" } },
          },
        }),
      })
    ).json()) as { id: string };
    await eventually(
      async () => ((await (await fetch(`${url}/api/v2/jobs/${job.id}`)).json()) as { status: string }).status === "succeeded" || undefined,
      "the job done",
    );
    child.kill("SIGTERM");
    await closed;
    const loaded = (await readFile(log, "utf8")).trim().split("\n");
    expect(loaded.some((u) => u.includes("/src/blobs/file-blob-store.ts"))).toBe(true);
    expect(loaded.filter((u) => /\/node_modules\/@aws-sdk\/|\/src\/blobs\/s3-blob-store\.ts/.test(u))).toEqual([]);
  });
});

describe("usage errors: exit 2 and the nearest name", () => {
  it("a mistyped command names the nearest one", async () => {
    const r = await runCli(["sevre"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`unknown command "sevre"; did you mean "serve"?`);
    const far = await runCli(["frobnicate"]);
    expect(far.code).toBe(2);
    expect(far.stderr).not.toContain("did you mean");
  });

  it("a mistyped flag names the nearest one, on client and server commands alike", async () => {
    const run = await runCli(["run", "examples/audio.json", "--bse-url", "http://x"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown flag --bse-url; did you mean --base-url?");
    // The flag's last word, as one would guess it (the production guide's walk tried --url).
    const url = await runCli(["run", "examples/audio.json", "--url", "http://x"]);
    expect(url.code).toBe(2);
    expect(url.stderr).toContain("unknown flag --url; did you mean --base-url?");
    // Several flags end in -url on serve: no guess.
    const serveUrl = await runCli(["serve", "--url", "http://x"]);
    expect(serveUrl.code).toBe(2);
    expect(serveUrl.stderr).not.toContain("did you mean");
    const serve = await runCli(["serve", "--prot", "0"]);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain("unknown flag --prot; did you mean --port?");
    expect(serve.stderr).toMatch(/Run (npx )?flowgate serve --help for usage\./);
    const mock = await runCli(["mock", "--prot", "4010"]);
    expect(mock.code).toBe(2);
    expect(mock.stderr).toContain("unknown flag --prot; did you mean --port?");
    const top = await runCli(["--verison"]);
    expect(top.code).toBe(2);
    expect(top.stderr).toContain("did you mean --version?");
  });

  it("serve and worker exit 2 on a bad value or a missing flag, as run does", async () => {
    for (const args of [
      ["serve", "--port", "http"],
      ["serve", "--engine", "comfy"],
      ["serve", "--no-dispatch"],
      ["worker"],
      ["worker", "--lease", "soon"],
      ["serve", "--blob-store", "s3://b/p"],
      ["worker", "--database-url", "postgres://127.0.0.1:9/x", "--blob-store", "s3://Bucket/p"],
      // deploy/systemd/flowgate.env's placeholder, left in: links anyone could forge.
      ["serve", "--signing-key", "change-me-to-the-output-of-openssl-rand-hex-32"],
    ]) {
      const r = await runCli([...args, "--data-dir", join(dir, "data")]);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/--\w/);
    }
  });
});

describe("a server, database or Redis that does not answer", () => {
  it("a client command says no flowgate server answers at the URL", async () => {
    const port = await closedPort();
    const r = await runCli(["status", "some-id", "--base-url", `http://127.0.0.1:${port}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no flowgate server answers at http://127.0.0.1:${port} (connection refused`);
    expect(r.stderr).not.toContain("fetch failed");
  });

  it("a wrong --database-url names PostgreSQL, the host and the port, and never the password", async () => {
    const refused = await runCli(["serve", "--port", "0", "--data-dir", join(dir, "d1"), "--database-url", "postgres://flow:hunter2@127.0.0.1:1/db"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("cannot reach PostgreSQL at 127.0.0.1:1 (connection refused");
    const unknownHost = await runCli(["migrate", "--database-url", "postgres://flow:hunter2@no-such-host.invalid/db"]);
    expect(unknownHost.code).toBe(1);
    expect(unknownHost.stderr).toContain("cannot reach PostgreSQL at no-such-host.invalid:5432 (no such host)");
    for (const r of [refused, unknownHost]) {
      expect(r.stderr + r.stdout).not.toContain("hunter2");
      expect(r.stderr).not.toMatch(/ECONNREFUSED|ENOTFOUND/);
    }
  });

  it("a bucket that does not answer is named with its endpoint and why; the server starts, not ready", async () => {
    const port = await closedPort();
    const server = await spawnCli(
      ["--port", "0", "--data-dir", join(dir, "d3"), "--blob-store", "s3://flowgate-test/p", "--s3-endpoint", `http://127.0.0.1:${port}`],
      {
        AWS_ACCESS_KEY_ID: "AKIDEXAMPLE",
        AWS_SECRET_ACCESS_KEY: "hunter2hunter2",
        AWS_REGION: "us-east-1",
      },
    );
    try {
      await eventually(() => (server.output().includes("cannot reach object storage") ? true : undefined), "the bucket's message");
      expect(server.output()).toContain(`cannot reach object storage at 127.0.0.1:${port} (bucket flowgate-test: connection refused`);
      expect(server.output()).not.toContain("hunter2");
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { checks: Record<string, boolean> }).checks.blobs).toBe(false);
    } finally {
      server.child.kill("SIGKILL");
      await server.exited;
    }
  });

  it("a wrong --redis-url names Redis, the host and the port, and never the password", async (context) => {
    const why = await postgresUnavailable();
    if (why) return context.skip(why);
    const schema = testSchemaName();
    await adminQuery(`CREATE SCHEMA ${schema}`);
    try {
      const r = await runCli([
        "serve",
        "--port",
        "0",
        "--data-dir",
        join(dir, "d2"),
        "--database-url",
        schemaUrl(schema),
        "--redis-url",
        "redis://:hunter2@127.0.0.1:1",
      ]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("cannot reach Redis at 127.0.0.1:1 (connection refused");
      expect(r.stderr + r.stdout).not.toContain("hunter2");
    } finally {
      await dropTestSchema(schema);
    }
  });
});
