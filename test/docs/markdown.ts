// Reading the project's Markdown for the documentation tests: which files, their links outside
// code blocks, their headings as GitHub anchors, and the rows of their tables.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The documentation a reader follows links through: the front door, docs/, and the Markdown beside them. */
export function documentationFiles(): string[] {
  const docs = readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => path.join("docs", f));
  const others = ["README.md", "CHANGELOG.md", "bench/RESULTS.md", "conformance/README.md", "conformance/UNTESTABLE.md"].filter((f) =>
    existsSync(path.join(ROOT, f)),
  );
  const modules = readdirSync(path.join(ROOT, "src"), { recursive: true, encoding: "utf8" })
    .filter((f) => path.basename(f) === "README.md")
    .map((f) => path.join("src", f));
  return [...others, ...docs, ...modules.sort()];
}

/** The lines of a Markdown text outside fenced code blocks. */
function proseLines(text: string): string[] {
  let fenced = false;
  return text.split("\n").filter((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** Every link and image target of a Markdown text, outside code blocks and inline code. */
export function linkTargets(text: string): string[] {
  const targets: string[] = [];
  for (const line of proseLines(text)) {
    const withoutCode = line.replace(/`[^`]*`/g, "``");
    for (const m of withoutCode.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) targets.push(m[1]!);
  }
  return targets;
}

/** The anchors GitHub gives a text's headings (lower case, punctuation dropped, spaces as hyphens). */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The body rows of every table in a text, each as its cells (trimmed, `\|` kept as a bar). */
export function tableRows(text: string): string[][] {
  const rows: string[][] = [];
  for (const line of proseLines(text)) {
    if (!/^\|.*\|\s*$/.test(line) || /^\|\s*-{3,}/.test(line)) continue;
    const cells = line
      .trim()
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim().replace(/\\\|/g, "|"));
    rows.push(cells);
  }
  return rows;
}

/** The text of a file under the repository root. */
export function read(relative: string): string {
  return readFileSync(path.join(ROOT, relative), "utf8");
}

/** A fenced shell block (```sh, ```bash, ```shell) of a Markdown text, with the line its code starts on. */
export interface ShellBlock {
  line: number;
  code: string;
}

/** Every fenced shell block of a text. */
export function shellBlocks(text: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  let current: ShellBlock | null = null;
  let fenced = false;
  text.split("\n").forEach((line, i) => {
    if (/^\s*```/.test(line)) {
      if (!fenced && /^\s*```(sh|bash|shell)\s*$/.test(line)) current = { line: i + 2, code: "" };
      else if (fenced && current) {
        blocks.push(current);
        current = null;
      }
      fenced = !fenced;
      return;
    }
    if (current) current.code += `${line}\n`;
  });
  return blocks;
}

/** A word of a shell command: its text with the quotes removed, and whether any of it was quoted. */
export interface ShellWord {
  text: string;
  quoted: boolean;
  /** The unquoted characters of the word (what the shell expands or globs). */
  bare: string;
}

/**
 * The simple commands of a block of shell code, each as its words: quotes honoured, backslash
 * line continuations joined, comments dropped, split at `&&`, `||`, `;`, `|`, `&` and newlines.
 * Enough of the shell for the commands documentation shows (no here-docs or substitutions inside
 * substitutions).
 */
export function shellCommands(code: string): ShellWord[][] {
  const commands: ShellWord[][] = [];
  let words: ShellWord[] = [];
  let word: ShellWord | null = null;
  const endWord = () => {
    if (word) words.push(word);
    word = null;
  };
  const endCommand = () => {
    endWord();
    if (words.length > 0) commands.push(words);
    words = [];
  };
  const grow = (text: string, quoted: boolean) => {
    word ??= { text: "", quoted: false, bare: "" };
    word.text += text;
    if (quoted) word.quoted = true;
    else word.bare += text;
  };
  for (let i = 0; i < code.length; i++) {
    const c = code[i]!;
    if (c === "\\" && code[i + 1] === "\n") {
      i++;
    } else if (c === "'") {
      const end = code.indexOf("'", i + 1);
      grow(code.slice(i + 1, end === -1 ? code.length : end), true);
      i = end === -1 ? code.length : end;
    } else if (c === '"') {
      let j = i + 1;
      while (j < code.length && code[j] !== '"') j += code[j] === "\\" ? 2 : 1;
      grow(code.slice(i + 1, j), true);
      i = j;
    } else if (c === "#" && word === null) {
      while (i + 1 < code.length && code[i + 1] !== "\n") i++;
    } else if (c === "\n" || c === ";" || c === "&" || c === "|") {
      endCommand();
      if ((c === "&" || c === "|") && code[i + 1] === c) i++;
    } else if (c === " " || c === "\t") {
      endWord();
    } else {
      grow(c, false);
    }
  }
  endCommand();
  return commands;
}

/** The statements of a block as the text a shell would read: a quote left open or a trailing backslash carries into the next line. */
export function shellStatements(code: string): string[] {
  const statements: string[] = [];
  let pending = "";
  for (const line of code.split("\n")) {
    pending += pending === "" ? line : `\n${line}`;
    const openQuote = (pending.replace(/"[^"]*"/g, "").match(/'/g)?.length ?? 0) % 2 === 1;
    if (openQuote || pending.endsWith("\\")) continue;
    if (pending.trim() !== "" && !pending.trim().startsWith("#")) statements.push(pending);
    pending = "";
  }
  return statements;
}
