// `flowgate status <id>`, `flowgate cancel <id>`, `flowgate list`.
import type { JobStatus } from "../client/types.ts";
import { CONNECTION_FLAGS, helpText, labelFlags, onePositional, parseCommand, stringFlag, UsageError, type CommandSpec } from "./command.ts";
import { FlowgateApiError } from "../client/errors.ts";
import { clientFrom } from "./connection.ts";
import { invokedAs, shellWord } from "./invocation.ts";
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
  const client = clientFrom(parsed);
  const job = await client.get(id).catch((err: unknown) => {
    throw err instanceof FlowgateApiError && err.code === "not_found" ? new Error(unknownJobText(id, client.baseUrl)) : err;
  });
  process.stdout.write(parsed.values.json ? `${JSON.stringify(job, null, 2)}\n` : jobSummary(job));
}

/** What a 404 on a job means to the person who typed its id. */
export function unknownJobText(id: string, baseUrl: string): string {
  return (
    `no job ${id} at ${baseUrl} (not_found, HTTP 404): the id is mistyped, the job passed its expires_at and was deleted, ` +
    `it belongs to another caller (another --token), or it is on another server (--base-url)`
  );
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
  const status = stringFlag(parsed.values, "status");
  const page = await clientFrom(parsed).list({
    status: status as JobStatus | undefined,
    limit,
    cursor: stringFlag(parsed.values, "cursor"),
    ...(labels ? { metadata: labels } : {}),
  });
  if (parsed.values.json) return void process.stdout.write(`${JSON.stringify(page, null, 2)}\n`);
  for (const job of page.jobs) process.stdout.write(`${jobRow(job)}\n`);
  if (page.jobs.length === 0) process.stdout.write("no jobs\n");
  if (page.next_cursor) process.stdout.write(`more: ${nextPageCommand({ status, labels, limit, baseUrl: baseUrlFlag(argv, parsed) }, page.next_cursor)}\n`);
}

/** The command that lists the next page of the same listing: the same filters, size and server, as the user can run it. */
export function nextPageCommand(
  listing: { status?: string | undefined; labels?: Record<string, string> | undefined; limit?: number | undefined; baseUrl?: string | undefined },
  cursor: string,
  command = invokedAs(),
): string {
  const words = [command, "list"];
  if (listing.status !== undefined) words.push("--status", listing.status);
  for (const [k, v] of Object.entries(listing.labels ?? {})) words.push("--label", shellWord(`${k}=${v}`));
  if (listing.limit !== undefined) words.push("--limit", String(listing.limit));
  if (listing.baseUrl !== undefined) words.push("--base-url", shellWord(listing.baseUrl));
  words.push("--cursor", shellWord(cursor));
  return words.join(" ");
}

/** --base-url when it was given on the command line (from FLOWGATE_BASE_URL it carries over by itself). */
function baseUrlFlag(argv: string[], parsed: ReturnType<typeof parseCommand>): string | undefined {
  return argv.some((a) => a === "--base-url" || a.startsWith("--base-url=")) ? stringFlag(parsed.values, "base-url") : undefined;
}
