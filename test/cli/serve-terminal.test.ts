// `npm start` in a terminal: text lines, quiet by default (no line per request), the dashboard and
// /docs URLs named; --log-level info lists requests as text; --log-format json keeps pino's lines.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prettyLine } from "../../src/server/pretty-log.ts";
import { logFormatOf } from "../../src/server/start.ts";
import { BIN, eventually, HAS_SCRIPT, ROOT } from "./cli.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flowgate-serve-tty-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Starts `flowgate serve` in a pseudo-terminal, requests /healthz once it listens, stops it, and returns all it printed. */
async function serveInTerminal(flags: string[], name: string): Promise<{ output: string; url: string }> {
  const args = [process.execPath, BIN, "serve", "--port", "0", "--data-dir", join(dir, name), ...flags].map((a) => `'${a}'`).join(" ");
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("FLOWGATE_")));
  const child = spawn("script", ["-qefc", args, "/dev/null"], { cwd: ROOT, env: { ...env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  const closed = new Promise((resolve) => child.on("close", resolve));
  const url = await eventually(() => /listening on (http:\S+)/.exec(output)?.[1], "the server listening");
  await (await fetch(`${url}/healthz`)).arrayBuffer();
  // A request the server logs at warn or below has been written (synchronously, on the terminal) once the next one answers.
  await (await fetch(`${url}/readyz`)).arrayBuffer();
  child.kill("SIGTERM");
  await closed;
  return { output: output.replaceAll("\r", ""), url };
}

describe.skipIf(!HAS_SCRIPT)("flowgate serve on a terminal", () => {
  it("prints text, no line per request, and the dashboard and /docs URLs", async () => {
    const { output, url } = await serveInTerminal([], "quiet");
    expect(output).toContain(`flowgate: dashboard ${url}/  API reference ${url}/docs`);
    expect(output).not.toMatch(/^\{/m);
    expect(output).not.toContain("/healthz");
  });

  it("lists requests as text lines with --log-level info, and as JSON with --log-format json", async () => {
    const info = await serveInTerminal(["--log-level", "info"], "info");
    expect(info.output).toMatch(/^\d\d:\d\d:\d\d INFO {2}GET \/healthz 200 \d+ms$/m);
    expect(info.output).not.toMatch(/^\{/m);
    const json = await serveInTerminal(["--log-format", "json"], "json");
    expect(json.output).toMatch(/^\{"level":30.*"path":"\/healthz"/m);
  });
});

describe("the log format", () => {
  it("is pretty on a terminal and JSON otherwise, unless asked", () => {
    expect(logFormatOf({ logFormat: "auto" }, true)).toBe("pretty");
    expect(logFormatOf({ logFormat: "auto" }, false)).toBe("json");
    expect(logFormatOf({ logFormat: "json" }, true)).toBe("json");
    expect(logFormatOf({ logFormat: "pretty" }, false)).toBe("pretty");
  });

  it("turns pino lines into text, errors with their message", () => {
    const time = Date.UTC(2026, 0, 1, 12, 0, 1);
    expect(
      prettyLine(
        JSON.stringify({ level: 30, time, req: { method: "GET", path: "/x" }, res: { statusCode: 404 }, responseTime: 1.6, msg: "request completed" }),
      ),
    ).toBe("12:00:01 INFO  GET /x 404 2ms\n");
    expect(prettyLine(JSON.stringify({ level: 50, time, msg: "unexpected failure", err: { message: "boom" } }))).toBe(
      "12:00:01 ERROR unexpected failure: boom\n",
    );
    expect(prettyLine("not json")).toBe("not json\n");
  });
});
