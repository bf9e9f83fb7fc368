// The flowgate command line: `flowgate <command> [flags]`.
import { serve } from "./serve.ts";

const COMMANDS: Record<string, { run: (argv: string[]) => Promise<void>; help: string }> = {
  serve: { run: serve, help: "run the server (the same as npm start)" },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(12)} ${c.help}`);
  return `Usage: flowgate <command> [flags]\n\nCommands:\n${lines.join("\n")}\n\nRun flowgate <command> --help for its flags.\n`;
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
    process.stderr.write(`flowgate ${command}: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
