// `flowgate status <id>`, `flowgate cancel <id>`, `flowgate list`.
import type { JobStatus } from "../client/types.ts";
import { CONNECTION_FLAGS, helpText, labelFlags, onePositional, parseCommand, stringFlag, UsageError, type CommandSpec } from "./command.ts";
import { clientFrom } from "./connection.ts";
import { jobRow, jobSummary } from "./job-text.ts";

/** Flags and help of `flowgate status`. */
export const STATUS: CommandSpec = {
  name: "status",
  summary: "Show a job: status, progress, outputs and error (read with GET, the authoritative view).",
  synopsis: "status <id> [flags]",
  flags: { ...CONNECTION_FLAGS },
};

/** Flags and help of `flowgate cancel`. */
export const CANCEL: CommandSpec = {
  name: "cancel",
  summary: "Cancel a job; a running job answers canceling and is canceled at its next node or step.",
  synopsis: "cancel <id> [flags]",
  flags: { ...CONNECTION_FLAGS },
};

/** Flags and help of `flowgate list`. */
export const LIST: CommandSpec = {
  name: "list",
  summary: "List your jobs, newest first.",
  synopsis: "list [--status S] [--label KEY=VALUE ...] [--limit N] [--cursor C] [flags]",
  flags: {
    status: { type: "string", arg: "S", help: "only jobs in this status (queued, running, succeeded, canceling, canceled, failed, expired)" },
    label: { type: "string", multiple: true, arg: "KEY=VALUE", help: "only jobs carrying this label (up to 3, all must match)" },
    limit: { type: "string", arg: "N", help: "page size, 1 to 100 (default 20)" },
    cursor: { type: "string", arg: "C", help: "next_cursor of the previous page" },
    ...CONNECTION_FLAGS,
  },
};

/** `flowgate status <id>` */
export async function status(argv: string[]): Promise<void> {
  const parsed = parseCommand(STATUS, argv);
  if (parsed.help) return void process.stdout.write(helpText(STATUS));
  const id = onePositional(parsed, "job id");
  const job = await clientFrom(parsed).get(id);
  process.stdout.write(parsed.values.json ? `${JSON.stringify(job, null, 2)}\n` : jobSummary(job));
}

/** `flowgate cancel <id>` */
export async function cancel(argv: string[]): Promise<void> {
  const parsed = parseCommand(CANCEL, argv);
  if (parsed.help) return void process.stdout.write(helpText(CANCEL));
  const id = onePositional(parsed, "job id");
  const job = await clientFrom(parsed).cancel(id);
  process.stdout.write(parsed.values.json ? `${JSON.stringify(job, null, 2)}\n` : `job ${job.id} ${job.status}\n`);
}

/** `flowgate list` */
export async function list(argv: string[]): Promise<void> {
  const parsed = parseCommand(LIST, argv);
  if (parsed.help) return void process.stdout.write(helpText(LIST));
  if (parsed.positionals.length > 0) throw new UsageError(`unexpected argument "${parsed.positionals[0]}"`);
  const limitText = stringFlag(parsed.values, "limit");
  const limit = limitText === undefined ? undefined : Number(limitText);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 100)) throw new UsageError(`--limit must be 1 to 100, got "${limitText}"`);
  const labels = labelFlags(parsed.values.label);
  const page = await clientFrom(parsed).list({
    status: stringFlag(parsed.values, "status") as JobStatus | undefined,
    limit,
    cursor: stringFlag(parsed.values, "cursor"),
    ...(labels ? { metadata: labels } : {}),
  });
  if (parsed.values.json) return void process.stdout.write(`${JSON.stringify(page, null, 2)}\n`);
  for (const job of page.jobs) process.stdout.write(`${jobRow(job)}\n`);
  if (page.jobs.length === 0) process.stdout.write("no jobs\n");
  if (page.next_cursor) process.stdout.write(`more: flowgate list --cursor ${page.next_cursor}\n`);
}
