// `flowgate logs <id>`: a job's captured standard output, read from its `urls.logs` link.
import { CONNECTION_FLAGS, helpText, onePositional, parseCommand, type CommandSpec } from "./command.ts";
import { clientFrom } from "./connection.ts";

/** Flags and help of `flowgate logs`. */
export const LOGS: CommandSpec = {
  name: "logs",
  summary: "Print a finished job's log (what its workflow wrote to standard output), where the server serves logs (serverless deployments).",
  synopsis: "logs <id> [flags]",
  flags: { ...CONNECTION_FLAGS },
};

/** Control characters other than newline and tab: the log is untrusted, and a terminal would obey them. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** `flowgate logs <id>` */
export async function logs(argv: string[]): Promise<void> {
  const parsed = parseCommand(LOGS, argv);
  if (parsed.help) return void process.stdout.write(helpText(LOGS));
  const id = onePositional(parsed, "job id");
  const log = await clientFrom(parsed).getLogs(id);
  if (parsed.values.json) return void process.stdout.write(`${JSON.stringify(log, null, 2)}\n`);
  if (log === null) {
    process.stderr.write(`job ${id} has no log: the server serves none here, or the job has not finished\n`);
    return;
  }
  const text = log.text.replace(CONTROL, "");
  process.stdout.write(text.length > 0 && !text.endsWith("\n") ? `${text}\n` : text);
  if (log.truncated) process.stderr.write("(log truncated: only its tail was kept)\n");
}
