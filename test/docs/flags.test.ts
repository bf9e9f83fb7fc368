// The flag tables of docs/ against the flag definitions: SERVE_FLAGS (`flowgate serve` and
// `flowgate worker`) against docs/configuration.md, and every other command's CommandSpec against
// docs/cli.md. A flag in the code and not in the doc, or in the doc and not in the code, or with
// another environment variable, fails.
import { describe, expect, it } from "vitest";
import { SERVE_FLAGS } from "../../src/config/config.ts";
import { ACCOUNTS, DEPLOYMENTS, KEYS, MIGRATE } from "../../src/cli/admin.ts";
import type { CommandSpec } from "../../src/cli/command.ts";
import { CONFORMANCE, MOCK } from "../../src/cli/delegates.ts";
import { CANCEL, LIST, STATUS } from "../../src/cli/jobs-commands.ts";
import { LOGS } from "../../src/cli/logs-command.ts";
import { RUN } from "../../src/cli/run.ts";
import { read, tableRows } from "./markdown.ts";

/** `--name ARG` or `--name` in a backquoted cell: the flag's name. */
function flagName(cell: string): string | null {
  return /^`--([a-z][a-z0-9-]*)(?:\s[^`]*)?`$/.exec(cell)?.[1] ?? null;
}

/** `` `FLOWGATE_X` (`1`) `` or empty: the variable's name, or "". */
function envName(cell: string): string {
  return /^`([A-Z][A-Z0-9_]*)`/.exec(cell)?.[1] ?? "";
}

/** Rows of docs/configuration.md's flag table as `--flag ENV`. */
function documentedServeFlags(text: string): string[] {
  return tableRows(text)
    .filter((cells) => cells.length === 4 && flagName(cells[0]!) !== null)
    .map((cells) => `--${flagName(cells[0]!)} ${envName(cells[1]!)}`);
}

/** Rows of docs/cli.md's flag table as `command --flag ENV`, one per command a row names. */
function documentedCommandFlags(text: string): string[] {
  const rows: string[] = [];
  for (const cells of tableRows(text)) {
    if (cells.length !== 4) continue;
    const flag = flagName(cells[1]!);
    if (flag === null) continue;
    for (const m of cells[0]!.matchAll(/`([a-z-]+)`/g)) rows.push(`${m[1]} --${flag} ${envName(cells[2]!)}`);
  }
  return rows;
}

const COMMANDS: CommandSpec[] = [RUN, STATUS, CANCEL, LIST, LOGS, MOCK, CONFORMANCE, KEYS, ACCOUNTS, DEPLOYMENTS, MIGRATE];

describe("docs/configuration.md against SERVE_FLAGS", () => {
  it("documents every flag of serve with its variable, and no other", () => {
    const inCode = Object.entries(SERVE_FLAGS).map(([name, f]) => `--${name} ${f.env}`);
    expect(documentedServeFlags(read("docs/configuration.md")).sort()).toEqual(inCode.sort());
  });

  it("would notice a flag missing from the doc (the check can fail)", () => {
    const text = read("docs/configuration.md").replace(/^\| `--lease` .*\n/m, "");
    expect(documentedServeFlags(text)).not.toContain("--lease FLOWGATE_LEASE");
    expect(documentedServeFlags(text).length).toBe(Object.keys(SERVE_FLAGS).length - 1);
  });
});

describe("docs/cli.md against the commands' flags", () => {
  it("documents every flag of every command with its variable, and no other", () => {
    const inCode = COMMANDS.flatMap((c) => Object.entries(c.flags).map(([name, f]) => `${c.name} --${name} ${f.env ?? ""}`));
    expect(documentedCommandFlags(read("docs/cli.md")).sort()).toEqual(inCode.sort());
  });

  it("reads a row naming several commands as one row per command", () => {
    expect(
      documentedCommandFlags(
        "| command | flag | environment | meaning |\n| --- | --- | --- | --- |\n| `run`, `list` | `--token T` | `FLOWGATE_TOKEN` | key |\n",
      ),
    ).toEqual(["run --token FLOWGATE_TOKEN", "list --token FLOWGATE_TOKEN"]);
  });
});
