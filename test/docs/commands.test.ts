// The shell commands of the README and docs/ run as written: every block parses (bash -n), a curl
// URL with brackets or braces has -g (curl globs them otherwise, and -s hides the error), what the
// shell would glob or cut is quoted, and a flowgate command is one a checkout can run (npx
// flowgate), with a subcommand and flags that exist. test/server/readme-commands.test.ts runs the
// README's first job against a real server, test/cli/readme-walkthrough.test.ts its examples walkthrough.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ACCOUNTS, DEPLOYMENTS, KEYS, MIGRATE } from "../../src/cli/admin.ts";
import type { CommandSpec } from "../../src/cli/command.ts";
import { HELP_FLAG } from "../../src/cli/command.ts";
import { MOCK } from "../../src/cli/delegates.ts";
import { CANCEL, LIST, STATUS } from "../../src/cli/jobs-commands.ts";
import { RUN } from "../../src/cli/run.ts";
import { SERVE_FLAGS } from "../../src/config/config.ts";
import { documentationFiles, read, shellBlocks, shellCommands, type ShellWord } from "./markdown.ts";

const SPECS: Record<string, CommandSpec> = Object.fromEntries([RUN, STATUS, CANCEL, LIST, MOCK, KEYS, ACCOUNTS, DEPLOYMENTS, MIGRATE].map((c) => [c.name, c]));
/** The flags each flowgate command takes; conformance passes its flags to the suite, which checks them itself. */
function flagsOf(command: string): Set<string> | null {
  if (command === "serve" || command === "worker") return new Set([...Object.keys(SERVE_FLAGS), "help"]);
  const spec = SPECS[command];
  return spec ? new Set([...Object.keys(spec.flags), ...Object.keys(HELP_FLAG)]) : null;
}

/** `<id>`, `<job id>`: the placeholders documentation writes for what the reader fills in. */
const PLACEHOLDER = /<([a-z][a-z -]*)>/gi;

/** What is wrong with one simple command, or nothing. */
function commandProblems(words: ShellWord[]): string[] {
  const args = words.slice(words.findIndex((w) => !/^[A-Z_][A-Z0-9_]*=/.test(w.text)));
  const texts = args.map((w) => w.text);
  const [name, ...rest] = texts[0] === "sudo" ? texts.slice(1) : texts;
  if (name === undefined || name === "export") return [];
  const problems: string[] = [];
  // npm has no package of ours: `npm install flowgate` would fetch nothing, or a stranger's package.
  if (name === "npm" && ["install", "i", "add"].includes(rest[0] ?? "") && rest.some((a) => /^flowgate(@.*)?$/.test(a)))
    problems.push("flowgate is not on the npm registry: install the tarball `npm pack` makes");
  if (name === "flowgate") problems.push("a checkout has no bare `flowgate`: write `npx flowgate`");
  if (name === "curl") {
    for (const w of args.slice(1)) {
      // Unquoted, `?` and `[` glob in the shell and `&` ends the command.
      if (/[?&[\]{}*]/.test(w.bare)) problems.push(`quote ${w.text}: the shell would glob or cut it`);
    }
    const globoff = rest.some((a) => a === "--globoff" || /^-[a-zA-Z]*g[a-zA-Z]*$/.test(a));
    const globbed = rest.find((a) => /^https?:\/\//.test(a) && /[[\]{}]/.test(a));
    if (globbed && !globoff) problems.push(`curl globs the brackets of ${globbed}: add -g (--globoff) or encode them`);
  }
  if (name === "npx" && rest[0] === "flowgate") {
    const command = rest[1] ?? "";
    const flags = flagsOf(command);
    if (command === "conformance") return problems;
    if (flags === null) return [...problems, `flowgate has no command "${command}"`];
    for (const a of rest.slice(2)) {
      const flag = /^--([a-z][a-z0-9-]*)/.exec(a)?.[1];
      if (flag !== undefined && !flags.has(flag)) problems.push(`flowgate ${command} has no flag --${flag}`);
    }
  }
  return problems;
}

/** Problems of every command of a block, and of the block as bash parses it. */
function blockProblems(code: string): string[] {
  const filled = code.replace(PLACEHOLDER, (_, words: string) => `PLACEHOLDER_${words.replace(/\W/g, "_")}`);
  const syntax = spawnSync("bash", ["-n"], { input: filled, encoding: "utf8" });
  const problems = syntax.status === 0 ? [] : [`bash -n: ${syntax.stderr.trim()}`];
  for (const words of shellCommands(filled))
    problems.push(
      ...commandProblems(words).map(
        (p) =>
          `${words
            .map((w) => w.text)
            .join(" ")
            .slice(0, 80)}: ${p}`,
      ),
    );
  return problems;
}

describe("the shell commands of the documentation", () => {
  const blocks = documentationFiles().flatMap((file) => shellBlocks(read(file)).map((b) => ({ ...b, where: `${file}:${b.line}` })));

  it("are found (the README's first job among them)", () => {
    expect(blocks.length).toBeGreaterThan(10);
    expect(blocks.some((b) => b.where.startsWith("README.md") && b.code.includes("curl"))).toBe(true);
  });

  it("parse, quote what the shell would glob, turn curl's globbing off for brackets, and name real flowgate commands and flags", () => {
    const problems = blocks.flatMap((b) => blockProblems(b.code).map((p) => `${b.where}: ${p}`));
    expect(problems).toEqual([]);
  });

  it("would catch the mistakes this check exists for (it can fail)", () => {
    expect(blockProblems("curl -s 'http://127.0.0.1:8189/api/v2/jobs?metadata[project]=hello'\n")).toEqual([
      expect.stringContaining("curl globs the brackets"),
    ]);
    expect(blockProblems("curl -s http://127.0.0.1:8189/api/v2/jobs?limit=1&status=failed\n").join("\n")).toContain("quote");
    expect(blockProblems("curl -sg 'http://h/api/v2/jobs?metadata[a]=b'\ncurl --globoff 'http://h/x?m[a]=b'\n")).toEqual([]);
    expect(blockProblems("flowgate list\n")).toEqual([expect.stringContaining("npx flowgate")]);
    expect(blockProblems("npx flowgate list --lable a=b\n")).toEqual([expect.stringContaining("no flag --lable")]);
    expect(blockProblems("npx flowgate lst\n")).toEqual([expect.stringContaining('no command "lst"')]);
    expect(blockProblems("sudo npm install flowgate @aws-sdk/client-s3\n")).toEqual([expect.stringContaining("not on the npm registry")]);
    expect(blockProblems("npm install /tmp/flowgate-0.1.0.tgz\n")).toEqual([]);
    expect(blockProblems('curl -d \'{"a": 1}\n')[0]).toContain("bash -n");
  });

  it("splits commands as the shell does: quotes, continuations, comments, && and pipes", () => {
    const commands = shellCommands("A=1 curl -s 'x y' \\\n  \"z\" # note\nnpm a && npm b | c\n");
    expect(commands.map((c) => c.map((w) => w.text))).toEqual([["A=1", "curl", "-s", "x y", "z"], ["npm", "a"], ["npm", "b"], ["c"]]);
  });
});
