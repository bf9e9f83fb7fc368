// The flowgate command line: `flowgate <command> [flags]`. Each command's module is imported only
// when that command runs, so `flowgate --help` and `--version` load no server, engine or client.
import { UsageError } from "./command.ts";
import { closest, flagHint } from "./suggest.ts";
import { invokedAs } from "./invocation.ts";
import { VERSION } from "../domain/version.ts";

type Run = (argv: string[]) => Promise<void>;

const COMMANDS: Record<string, { load: () => Promise<Run>; help: string }> = {
  serve: { load: async () => (await import("./serve.ts")).serve, help: "run the server (the same as npm start)" },
  worker: {
    load: async () => (await import("./worker.ts")).worker,
    help: "claim and run jobs from a shared PostgreSQL database (no API; API nodes: serve --no-dispatch)",
  },
  run: { load: async () => (await import("./run.ts")).run, help: "run a workflow graph: upload inputs, submit, show progress, download outputs" },
  status: { load: async () => (await import("./jobs-commands.ts")).status, help: "show a job's status, progress, outputs and error" },
  cancel: { load: async () => (await import("./jobs-commands.ts")).cancel, help: "cancel a job" },
  list: { load: async () => (await import("./jobs-commands.ts")).list, help: "list your jobs, newest first" },
  logs: { load: async () => (await import("./logs-command.ts")).logs, help: "print a finished job's log, where the server serves logs" },
  conformance: { load: async () => (await import("./delegates.ts")).conformance, help: "run the contract conformance suite against a server" },
  mock: { load: async () => (await import("./delegates.ts")).mock, help: "serve a Prism mock of the spec" },
  keys: { load: async () => (await import("./admin.ts")).keys, help: "create or revoke API keys (cloud, serverless)" },
  accounts: { load: async () => (await import("./admin.ts")).accounts, help: "manage accounts: tier, credits, subscription (cloud, serverless)" },
  deployments: { load: async () => (await import("./admin.ts")).deployments, help: "manage serverless deployments and their states" },
  migrate: { load: async () => (await import("./admin.ts")).migrate, help: "bring the database schema (SQLite or --database-url PostgreSQL) to this version" },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(12)} ${c.help}`);
  return (
    `Usage: flowgate <command> [flags]\n       flowgate --version\n\nCommands:\n${lines.join("\n")}\n\n` +
    `Client commands read FLOWGATE_BASE_URL (default http://127.0.0.1:8189) and FLOWGATE_TOKEN.\n` +
    `Run flowgate <command> --help for its flags.\n`
  );
}

/** The message of a command or top-level flag flowgate does not know, with the nearest known one. */
function unknownText(word: string): string {
  if (word.startsWith("-")) return `unknown flag ${word}${flagHint(word, ["help", "version"])}`;
  const match = closest(word, Object.keys(COMMANDS));
  return `unknown command "${word}"${match ? `; did you mean "${match}"?` : ""}`;
}

const [command, ...rest] = process.argv.slice(2);
if (!command || command === "--help" || command === "-h" || command === "help") {
  process.stdout.write(usage());
} else if (command === "--version" || command === "-V" || command === "version") {
  process.stdout.write(`flowgate ${VERSION}\n`);
} else if (!Object.hasOwn(COMMANDS, command)) {
  process.stderr.write(`flowgate: ${unknownText(command)}\n\n${usage()}`);
  process.exitCode = 2;
} else {
  try {
    await (await COMMANDS[command]!.load())(rest);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`flowgate ${command}: ${err.message}\nRun ${invokedAs()} ${command} --help for usage.\n`);
      process.exitCode = 2;
    } else if ((err as Error | null)?.name === "MissingPackageError") {
      // A configuration this install cannot serve (a bucket without the AWS SDK): one line, what to
      // install. Known by name: main loads no server module up front.
      process.stderr.write(`flowgate ${command}: ${(err as Error).message}\n`);
      process.exitCode = 2;
    } else {
      const { describeError } = await import("./connection.ts");
      process.stderr.write(`flowgate ${command}: ${describeError(err)}\n`);
      process.exitCode = 1;
    }
    // A command that failed is over: what a half-started server had opened must not keep it alive.
    process.exit();
  }
}
