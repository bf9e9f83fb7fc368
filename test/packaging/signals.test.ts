// SIGTERM to npm stops the server npm started: `npx flowgate serve` and `npm run mock` run the
// command in a shell that does not pass npm's signal on, and the server used to keep running,
// orphaned, on its port.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, ROOT } from "../cli/cli.ts";
import { freePort } from "../fixtures/net.ts";

/** PATH with this test's Node first, as npm puts node_modules/.bin first for its scripts. */
const PATH = `${join(ROOT, "node_modules", ".bin")}:${process.env.PATH ?? ""}`;
/** A user's shell: none of the npm_* or FLOWGATE_* settings of the `npm test` that runs this file. */
const ENV = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("npm_") && !k.startsWith("FLOWGATE_"))), PATH };

/** Whether something answers HTTP at `url`. */
const answers = (url: string) =>
  fetch(url).then(
    () => true,
    () => false,
  );

/** Starts `npm ...args`, waits for `url` to answer, sends npm SIGTERM, and waits until nothing answers at `url` any more. */
async function stopsWithNpm(args: string[], url: () => string | undefined, output: { text: string }): Promise<void> {
  const npm = spawn("npm", args, { cwd: ROOT, env: ENV, stdio: ["ignore", "pipe", "pipe"] });
  npm.stdout.on("data", (d: Buffer) => (output.text += d.toString()));
  npm.stderr.on("data", (d: Buffer) => (output.text += d.toString()));
  const exited = new Promise((resolve) => npm.on("close", resolve));
  try {
    const target = await eventually(
      async () => {
        const u = url();
        return u !== undefined && (await answers(u)) ? u : undefined;
      },
      `${args.join(" ")} answering`,
      90_000,
    );
    npm.kill("SIGTERM");
    await exited;
    await eventually(async () => ((await answers(target)) ? undefined : true), `the server behind ${args.join(" ")} stopping`, 30_000);
  } finally {
    if (npm.exitCode === null) npm.kill("SIGKILL");
  }
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flowgate-signals-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("SIGTERM to npm", () => {
  it("stops the server behind `npx flowgate serve`", async () => {
    const output = { text: "" };
    await stopsWithNpm(
      ["exec", "--offline", "--", "flowgate", "serve", "--port", "0", "--data-dir", join(dir, "data")],
      () => /listening on (http:\/\/\S+)/.exec(output.text)?.[1],
      output,
    );
    expect(output.text).toContain("listening on");
  }, 150_000);

  it("stops the Prism mock behind `npm run mock`", async () => {
    const port = await freePort();
    const output = { text: "" };
    await stopsWithNpm(["run", "mock", "--", "--port", String(port)], () => `http://127.0.0.1:${port}/healthz`, output);
  }, 150_000);
});
