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
