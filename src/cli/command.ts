// A small frame for the client subcommands: flags with environment fallbacks, --help text
// generated from the same table, and usage errors told apart from failures.
import { parseArgs } from "node:util";
import { explainParseError } from "./suggest.ts";

/** One flag: its type, the environment variable it falls back to, and its one-line help. */
export interface FlagSpec {
  type: "string" | "boolean";
  multiple?: boolean;
  short?: string;
  env?: string;
  /** Placeholder shown in help, e.g. URL. */
  arg?: string;
  help: string;
}

export interface CommandSpec {
  name: string;
  /** One line, shown in `flowgate --help`. */
  summary: string;
  /** Synopsis after `flowgate`, e.g. `status <id> [flags]`. */
  synopsis: string;
  flags: Record<string, FlagSpec>;
  /** Paragraphs after the flags. */
  details?: string;
}

/** A mistake in the command line (exit code 2, with a pointer to --help). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Flags shared by every command that talks to a server. */
export const CONNECTION_FLAGS: Record<string, FlagSpec> = {
  "base-url": { type: "string", env: "FLOWGATE_BASE_URL", arg: "URL", help: "server address, with any mount prefix (default http://127.0.0.1:8189)" },
  token: { type: "string", env: "FLOWGATE_TOKEN", arg: "T", help: "API key, sent as a bearer token (default: none)" },
  json: { type: "boolean", help: "print JSON on stdout instead of text" },
};

/** --help, which every command has. */
export const HELP_FLAG: Record<string, FlagSpec> = { help: { type: "boolean", short: "h", help: "show this help" } };

export interface ParsedCommand {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  help: boolean;
}

/** Parses argv against a command's flags; a flag left out takes its environment variable. */
export function parseCommand(spec: CommandSpec, argv: string[], env: NodeJS.ProcessEnv = process.env): ParsedCommand {
  const flags = { ...spec.flags, ...HELP_FLAG };
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: Object.fromEntries(
        Object.entries(flags).map(([name, f]) => [name, { type: f.type, ...(f.multiple ? { multiple: true } : {}), ...(f.short ? { short: f.short } : {}) }]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(explainParseError((err as Error).message, Object.keys(flags)));
  }
  const values = { ...parsed.values } as ParsedCommand["values"];
  for (const [name, f] of Object.entries(flags)) {
    if (values[name] === undefined && f.env && env[f.env] !== undefined && env[f.env] !== "") {
      values[name] = f.type === "boolean" ? env[f.env] === "1" || env[f.env] === "true" : env[f.env];
    }
  }
  return { values, positionals: parsed.positionals, help: values.help === true };
}

/** The --help text of a command, from its flag table. */
export function helpText(spec: CommandSpec): string {
  const flags = { ...spec.flags, ...HELP_FLAG };
  const rows = Object.entries(flags).map(([name, f]) => {
    const left = `${f.short ? `-${f.short}, ` : ""}--${name}${f.arg ? ` ${f.arg}` : ""}`;
    const env = f.env ? ` [env ${f.env}]` : "";
    const repeat = f.multiple ? " (repeatable)" : "";
    return `  ${left.padEnd(26)} ${f.help}${repeat}${env}`;
  });
  return `Usage: flowgate ${spec.synopsis}\n\n${spec.summary}\n\nFlags:\n${rows.join("\n")}\n${spec.details ? `\n${spec.details.trim()}\n` : ""}`;
}

/** A string flag's value, or undefined. */
export function stringFlag(values: ParsedCommand["values"], name: string): string | undefined {
  const v = values[name];
  return typeof v === "string" ? v : undefined;
}

/** Exactly one positional argument, named for the error message. */
export function onePositional(parsed: ParsedCommand, what: string): string {
  if (parsed.positionals.length !== 1) throw new UsageError(`expected one ${what}, got ${parsed.positionals.length}`);
  return parsed.positionals[0]!;
}

/**
 * The `--label KEY=VALUE` flags as a map (undefined when none). The key is what comes before the
 * first `=`; the server checks the bounds. A key given twice is a usage error.
 */
export function labelFlags(values: unknown): Record<string, string> | undefined {
  const given = (values as string[] | undefined) ?? [];
  if (given.length === 0) return undefined;
  const labels: Record<string, string> = {};
  for (const flag of given) {
    const at = flag.indexOf("=");
    if (at <= 0) throw new UsageError(`--label must be KEY=VALUE, got "${flag}"`);
    const key = flag.slice(0, at);
    if (Object.hasOwn(labels, key)) throw new UsageError(`--label ${key} is given twice`);
    labels[key] = flag.slice(at + 1);
  }
  return labels;
}
