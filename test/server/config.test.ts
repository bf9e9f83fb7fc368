// `flowgate serve` settings: defaults (127.0.0.1:8189), flags and their environment variables
// (flags win), refusals of bad values, the printed settings without secrets, and the effect of
// --public-url on signed links.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { describeConfig, loadConfig, parseDuration, parseSize, settingsLine } from "../../src/config/config.ts";
import { imageGraph, ROOT, startTestServer } from "./helpers.ts";

describe("configuration", () => {
  it("defaults to the self-hosted profile on 127.0.0.1:8189, open, ./data", () => {
    const c = loadConfig([], {});
    expect(c).toMatchObject({
      host: "127.0.0.1",
      port: 8189,
      token: null,
      publicUrl: null,
      queueLimit: 10000,
      concurrency: 2,
      retentionMs: 7 * 86_400_000,
      signingKey: null,
      surface: "self-hosted",
    });
    expect(c.dataDir.endsWith("/data")).toBe(true);
  });

  it("reads every flag, and its environment variable when the flag is absent", () => {
    const flags = loadConfig(
      [
        "--port",
        "9000",
        "--host",
        "0.0.0.0",
        "--data-dir",
        "/tmp/fg-x",
        "--token",
        "t0k3n",
        "--public-url",
        "https://fg.example.com/",
        "--queue-limit",
        "5",
        "--concurrency",
        "3",
        "--retention",
        "12h",
        "--signing-key",
        "k".repeat(32),
      ],
      {},
    );
    expect(flags).toMatchObject({
      port: 9000,
      host: "0.0.0.0",
      dataDir: "/tmp/fg-x",
      token: "t0k3n",
      publicUrl: "https://fg.example.com",
      queueLimit: 5,
      concurrency: 3,
      retentionMs: 12 * 3_600_000,
      signingKey: "k".repeat(32),
    });
    const env = loadConfig([], {
      FLOWGATE_PORT: "9001",
      FLOWGATE_HOST: "::1",
      FLOWGATE_DATA_DIR: "/tmp/fg-y",
      FLOWGATE_TOKEN: "e",
      FLOWGATE_PUBLIC_URL: "http://a:1",
      FLOWGATE_QUEUE_LIMIT: "6",
      FLOWGATE_CONCURRENCY: "4",
      FLOWGATE_RETENTION: "30m",
      FLOWGATE_SIGNING_KEY: "s".repeat(32),
    });
    expect(env).toMatchObject({
      port: 9001,
      host: "::1",
      dataDir: "/tmp/fg-y",
      token: "e",
      publicUrl: "http://a:1",
      queueLimit: 6,
      concurrency: 4,
      retentionMs: 1_800_000,
      signingKey: "s".repeat(32),
    });
    expect(loadConfig(["--port", "9002"], { FLOWGATE_PORT: "9001" }).port).toBe(9002);
  });

  it.each([
    [["--port", "70000"]],
    [["--port", "x"]],
    [["--concurrency", "0"]],
    [["--queue-limit", "-1"]],
    [["--retention", "forever"]],
    [["--public-url", "ftp://x"]],
    [["--surface", "mars"]],
    [["--no-such-flag", "1"]],
  ])("refuses %j", (argv) => {
    expect(() => loadConfig(argv, {})).toThrow();
  });

  it("parses sizes, and --cache-size sets the engine cache (256MB by default, 0 turns it off)", () => {
    expect(parseSize("256MB")).toBe(256 * 1024 ** 2);
    expect(parseSize("1.5 GiB")).toBe(1.5 * 1024 ** 3);
    expect(parseSize("64k")).toBe(65_536);
    expect(parseSize("1000")).toBe(1000);
    expect(parseSize("0")).toBe(0);
    for (const bad of ["", "-1MB", "12 parsecs", "MB"]) expect(() => parseSize(bad)).toThrow(/invalid size/);
    expect(loadConfig([], {}).cacheBytes).toBe(256 * 1024 ** 2);
    expect(loadConfig(["--cache-size", "0"], {}).cacheBytes).toBe(0);
    expect(loadConfig([], { FLOWGATE_CACHE_SIZE: "1GB" }).cacheBytes).toBe(1024 ** 3);
    expect(describeConfig(loadConfig(["--cache-size", "64MB"], {})).cacheSize).toBe("64MB");
  });

  it("--job-memory sets the per-job memory budget (1GB by default, never 0)", () => {
    expect(loadConfig([], {}).jobMemoryBytes).toBe(1024 ** 3);
    expect(loadConfig(["--job-memory", "512MB"], {}).jobMemoryBytes).toBe(512 * 1024 ** 2);
    expect(loadConfig([], { FLOWGATE_JOB_MEMORY: "2GB" }).jobMemoryBytes).toBe(2 * 1024 ** 3);
    expect(describeConfig(loadConfig(["--job-memory", "64MB"], {})).jobMemory).toBe("64MB");
    for (const bad of ["0", "lots"]) expect(() => loadConfig(["--job-memory", bad], {})).toThrow(/job-memory|invalid size/);
  });

  it("--stream-preview-rate bounds previews a second per event stream (4 by default, above 0)", () => {
    expect(loadConfig([], {}).streamPreviewRate).toBe(4);
    expect(loadConfig(["--stream-preview-rate", "0.5"], {}).streamPreviewRate).toBe(0.5);
    expect(loadConfig([], { FLOWGATE_STREAM_PREVIEW_RATE: "10" }).streamPreviewRate).toBe(10);
    for (const bad of ["0", "-1", "fast"])
      expect(() => loadConfig([`--stream-preview-rate=${bad}`], {})).toThrow(/--stream-preview-rate must be a number above 0/);
  });

  it("--shutdown-grace takes a duration or 0 (25s by default)", () => {
    expect(loadConfig([], {}).shutdownGraceMs).toBe(25_000);
    expect(loadConfig(["--shutdown-grace", "5m"], {}).shutdownGraceMs).toBe(300_000);
    expect(loadConfig(["--shutdown-grace", "0"], {}).shutdownGraceMs).toBe(0);
    expect(loadConfig([], { FLOWGATE_SHUTDOWN_GRACE: "0s" }).shutdownGraceMs).toBe(0);
    expect(describeConfig(loadConfig(["--shutdown-grace", "90s"], {})).shutdownGrace).toBe("90s");
    for (const bad of ["", "soon", "10"]) expect(() => loadConfig(["--shutdown-grace", bad], {})).toThrow(/duration/);
    expect(() => loadConfig(["--shutdown-grace=-5s"], {})).toThrow(/duration/);
  });

  it("parses durations", () => {
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("45s")).toBe(45_000);
    expect(parseDuration("1.5h")).toBe(5_400_000);
    expect(() => parseDuration("0s")).toThrow();
  });

  it("--blob-store s3://, --s3-endpoint and --blob-proxy (flags or variables); bad or conflicting ones are refused", () => {
    expect(loadConfig([], {})).toMatchObject({ blobStore: null, s3Endpoint: null, blobProxy: false });
    const c = loadConfig(["--blob-store", "s3://media/prod", "--s3-endpoint", "http://minio:9000/", "--blob-proxy"], {});
    expect(c).toMatchObject({ blobStore: "s3://media/prod", s3Endpoint: "http://minio:9000", blobProxy: true });
    expect(loadConfig([], { FLOWGATE_BLOB_STORE: "s3://media", FLOWGATE_S3_ENDPOINT: "https://r2.example", FLOWGATE_BLOB_PROXY: "1" })).toMatchObject({
      blobStore: "s3://media",
      s3Endpoint: "https://r2.example",
      blobProxy: true,
    });
    expect(settingsLine(c)).toContain("blobStore=s3://media/prod");
    expect(() => loadConfig(["--blob-store", "/srv/blobs"], {})).toThrow(/s3:\/\/bucket\/prefix/);
    expect(() => loadConfig(["--blob-store", "s3://media", "--blob-dir", "/srv/blobs"], {})).toThrow(/exclude each other/);
    expect(() => loadConfig(["--s3-endpoint", "http://minio:9000"], {})).toThrow(/goes with --blob-store/);
    expect(() => loadConfig(["--blob-store", "s3://media", "--s3-endpoint", "minio:9000"], {})).toThrow(/http\(s\) URL/);
  });

  it("prints settings without secrets", () => {
    const c = loadConfig(["--token", "very-secret-token", "--signing-key", "very-secret-signing-key-0123456789"], {});
    const line = settingsLine(c);
    expect(line).not.toContain("very-secret");
    expect(line).toContain("token=(set)");
    expect(line).toContain("port=8189");
    expect(JSON.stringify(describeConfig(c))).not.toContain("very-secret");
  });
});

describe("the command line", () => {
  const run = (args: string[]) =>
    spawnSync(process.execPath, [join(ROOT, "bin/flowgate.js"), ...args], { cwd: ROOT, encoding: "utf8", env: { ...process.env, FLOWGATE_TOKEN: "" } });

  it("flowgate serve --help lists every flag with its environment variable", () => {
    const r = run(["serve", "--help"]);
    expect(r.status).toBe(0);
    for (const flag of ["port", "host", "data-dir", "token", "public-url", "queue-limit", "concurrency", "retention", "signing-key"]) {
      expect(r.stdout).toContain(`--${flag}`);
      expect(r.stdout).toContain(`FLOWGATE_${flag.toUpperCase().replace(/-/g, "_")}`);
    }
  });

  it("a bad flag is a usage error (exit code 2) in one line and a pointer to --help, not a stack trace", () => {
    const r = run(["serve", "--port", "nope"]);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([expect.stringContaining("--port"), expect.stringMatching(/^Run (npx )?flowgate serve --help for usage\.$/)]);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

describe("--public-url", () => {
  it("URL-3 GEN-5 signed output links use it; follow-up links stay host-relative", async () => {
    const s = await startTestServer();
    const pub = await startTestServer({ flags: ["--public-url", "https://files.example.com/fg"] });
    try {
      const job = await pub.api.waitTerminal((await pub.api.submit(imageGraph())).id);
      expect(job.urls.self).toBe(`/api/v2/jobs/${job.id}`);
      const url = new URL(job.outputs[0].url);
      expect(url.origin).toBe("https://files.example.com");
      expect(url.pathname).toBe(`/fg/api/v2/assets/${job.outputs[0].id}/content`);
      // Without it, links use the request's own origin.
      const plain = await s.api.waitTerminal((await s.api.submit(imageGraph())).id);
      expect(new URL(plain.outputs[0].url).origin).toBe(s.url);
      // The signature covers the path the server sees (the public prefix is stripped by the proxy).
      const local = new URL(`${pub.url}${url.pathname.replace(/^\/fg/, "")}${url.search}`);
      expect((await fetch(local)).status).toBe(200);
    } finally {
      await s.stop();
      await pub.stop();
    }
  });
});
