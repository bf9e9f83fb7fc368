// The flowgate command line: `flowgate <command> [flags]`.
import { accounts, deployments, keys, migrate } from "./admin.ts";
import { UsageError } from "./command.ts";
import { describeError } from "./connection.ts";
import { conformance, mock } from "./delegates.ts";
import { cancel, list, status } from "./jobs-commands.ts";
import { run } from "./run.ts";
import { serve } from "./serve.ts";
import { worker } from "./worker.ts";

const COMMANDS: Record<string, { run: (argv: string[]) => Promise<void>; help: string }> = {
  serve: { run: serve, help: "run the server (the same as npm start)" },
  worker: { run: worker, help: "claim and run jobs from a shared PostgreSQL database (no HTTP; API nodes: serve --no-dispatch)" },
  run: { run, help: "run a workflow graph: upload inputs, submit, show progress, download outputs" },
  status: { run: status, help: "show a job's status, progress, outputs and error" },
  cancel: { run: cancel, help: "cancel a job" },
  list: { run: list, help: "list your jobs, newest first" },
  conformance: { run: conformance, help: "run the contract conformance suite against a server" },
  mock: { run: mock, help: "serve a Prism mock of the spec" },
  keys: { run: keys, help: "create or revoke API keys (cloud, serverless)" },
  accounts: { run: accounts, help: "manage accounts: tier, credits, subscription (cloud, serverless)" },
  deployments: { run: deployments, help: "manage serverless deployments and their states" },
  migrate: { run: migrate, help: "bring the database schema (SQLite or --database-url PostgreSQL) to this version" },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(12)} ${c.help}`);
  return (
    `Usage: flowgate <command> [flags]\n\nCommands:\n${lines.join("\n")}\n\n` +
    `Client commands read FLOWGATE_BASE_URL (default http://127.0.0.1:8189) and FLOWGATE_TOKEN.\n` +
    `Run flowgate <command> --help for its flags.\n`
  );
}

const [command, ...rest] = process.argv.slice(2);
if (!command || command === "--help" || command === "-h" || command === "help") {
  process.stdout.write(usage());
} else if (!(command in COMMANDS)) {
  process.stderr.write(`flowgate: unknown command "${command}"\n\n${usage()}`);
  process.exitCode = 2;
} else {
  try {
    await COMMANDS[command]!.run(rest);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`flowgate ${command}: ${err.message}\nRun flowgate ${command} --help for usage.\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`flowgate ${command}: ${describeError(err)}\n`);
      process.exitCode = 1;
    }
  }
}
