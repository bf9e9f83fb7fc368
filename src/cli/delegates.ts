// `flowgate conformance` and `flowgate mock`: thin doors to tools that live elsewhere in the
// repository (conformance/cli.ts, scripts/mock.ts), loaded only when asked for. ROOT is the
// checkout, or dist/ in an installed package, whose build mirrors the tree (dist/conformance/cli.js)
// and has no scripts/.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { constants } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";
import { helpText, parseCommand, type CommandSpec } from "./command.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Flags and help of `flowgate conformance`. */
export const CONFORMANCE: CommandSpec = {
  name: "conformance",
  summary: "Run the contract conformance suite against a live server (conformance/cli.ts).",
  synopsis: "conformance --base-url URL [--token T] [--surface self-hosted|cloud|serverless] ...",
  flags: {},
  details: "Every argument is passed to conformance/cli.ts; its usage follows.",
};

/** Flags and help of `flowgate mock`. */
export const MOCK: CommandSpec = {
  name: "mock",
  summary: "Serve a Prism mock of spec/openapi.yaml with the spec's examples (scripts/mock.ts).",
  synopsis: "mock [--port N] [--host H] [--dynamic]",
  flags: {
    port: { type: "string", env: "FLOWGATE_MOCK_PORT", arg: "N", help: "port to listen on (default 4010)" },
    host: { type: "string", arg: "H", help: "interface to bind (default 127.0.0.1)" },
    dynamic: { type: "boolean", help: "generate data from the schemas instead of the examples" },
  },
};

/** Waits until what was written to stdout and stderr has been handed to the OS. */
function flushed(): Promise<void> {
  const drain = (s: NodeJS.WriteStream) => new Promise<void>((resolve) => s.write("", () => resolve()));
  return Promise.all([drain(process.stdout), drain(process.stderr)]).then(() => undefined);
}

/**
 * Runs `<root>/conformance/cli.ts` through its exported `main(argv)` (or `run(argv)`) and
 * returns the exit code; explains when the suite is missing.
 */
export async function runConformance(argv: string[], root: string): Promise<number> {
  const base = root.replace(/\/?$/, "/");
  const script = [`${base}conformance/cli.ts`, `${base}conformance/cli.js`].find((file) => existsSync(file)) ?? `${base}conformance/cli.ts`;
  const help = argv.includes("--help") || argv.includes("-h");
  if (help) process.stdout.write(`${helpText(CONFORMANCE)}\n`);
  if (!existsSync(script)) {
    if (help) {
      process.stdout.write("(conformance/cli.ts is not in this checkout yet.)\n");
      return 0;
    }
    process.stderr.write("flowgate conformance: the conformance suite is not in this checkout (conformance/cli.ts is missing).\n");
    return 1;
  }
  const module = (await import(pathToFileURL(script).href)) as { main?: unknown; run?: unknown };
  const entry = typeof module.main === "function" ? module.main : typeof module.run === "function" ? module.run : null;
  if (!entry) {
    process.stderr.write("flowgate conformance: conformance/cli.ts exports no main(argv) or run(argv) to call; use npm run conformance.\n");
    return 1;
  }
  const code = await (entry as (argv: string[]) => unknown)(argv);
  return typeof code === "number" ? code : 0;
}

/** `flowgate conformance ...` */
export async function conformance(argv: string[]): Promise<void> {
  const code = await runConformance(argv, ROOT);
  // The suite may leave connections open (keep-alive, sockets); its own entry point exits too.
  await flushed();
  process.exit(code);
}

/** Prism's major version the mock runs (the checkout's dev dependency, or fetched by npx in an installed package). */
const PRISM = "@stoplight/prism-cli@5";

/**
 * How `flowgate mock` starts: the checkout's scripts/mock.ts (Prism behind the proxy that gives its
 * errors the contract's envelope), or, in an installed package, Prism itself through npx on the
 * package's spec/openapi.yaml, with a line saying so.
 */
export function mockLaunch(argv: string[], root: string): { command: string; args: string[]; note: string | null } {
  const base = root.replace(/\/?$/, "/");
  if (existsSync(`${base}scripts/mock.ts`)) return { command: process.execPath, args: ["--import", "tsx", `${base}scripts/mock.ts`, ...argv], note: null };
  const spec = [`${base}spec/openapi.yaml`, `${base}../spec/openapi.yaml`].find((file) => existsSync(file)) ?? `${base}../spec/openapi.yaml`;
  const { values } = parseCommand(MOCK, argv);
  const args = ["--yes", PRISM, "mock", spec, "--port", String(values.port ?? "4010"), "--host", String(values.host ?? "127.0.0.1")];
  if (values.dynamic === true) args.push("--dynamic");
  const note = `flowgate mock: running Prism (${PRISM}, fetched by npx on first use) on ${spec}; a checkout's npm run mock also gives Prism's errors the contract's envelope.\n`;
  return { command: "npx", args, note };
}

/** `flowgate mock ...`: a child process with the same arguments (scripts/mock.ts in a checkout, Prism through npx when installed). */
export async function mock(argv: string[]): Promise<void> {
  if (parseCommand(MOCK, argv, {}).help) return void process.stdout.write(helpText(MOCK)); // a mistyped flag is a usage error here, not in the child
  const launch = mockLaunch(argv, ROOT);
  if (launch.note) process.stderr.write(launch.note);
  const child = spawn(launch.command, launch.args, { cwd: ROOT, stdio: "inherit" });
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
  const code = await new Promise<number>((resolve) => {
    child.on("error", (err) => {
      process.stderr.write(`flowgate mock: cannot start ${launch.command}: ${err.message}\n`);
      resolve(1);
    });
    child.on("exit", (c, s) => resolve(c ?? 128 + (s ? (constants.signals[s] ?? 0) : 0)));
  });
  process.exitCode = code;
}
