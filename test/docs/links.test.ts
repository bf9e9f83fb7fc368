// Every relative link in the README, docs/ and the Markdown beside them points at a file that
// exists, and an anchor at a heading of the file it names: moving reference text between files
// must not leave a reader at a dead link.
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { documentationFiles, headingAnchors, linkTargets, read, ROOT } from "./markdown.ts";

/** The broken links of one file, as `target: reason`. */
function brokenLinks(file: string): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(read(file))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto: ...
    const [rawPath, anchor] = target.split("#", 2) as [string, string | undefined];
    const resolved = rawPath === "" ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), decodeURIComponent(rawPath));
    if (!resolved.startsWith(ROOT + path.sep) && resolved !== ROOT) {
      broken.push(`${target}: outside the repository`);
      continue;
    }
    if (!existsSync(resolved)) {
      broken.push(`${target}: no such file`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith(".md") && statSync(resolved).isFile()) {
      if (!headingAnchors(read(path.relative(ROOT, resolved))).has(anchor)) broken.push(`${target}: no heading with that anchor`);
    }
  }
  return broken;
}

describe("documentation links", () => {
  it("covers the README and every page of docs/", () => {
    const files = documentationFiles();
    expect(files).toContain("README.md");
    expect(files).toContain("docs/README.md");
    expect(files).toContain("docs/configuration.md");
  });

  for (const file of documentationFiles()) {
    it(`${file}: every relative link resolves`, () => {
      expect(brokenLinks(file)).toEqual([]);
    });
  }

  it("finds a broken link and a broken anchor (the check can fail)", () => {
    expect(linkTargets("see [a](missing.md) and `[b](code.md)`\n```\n[c](fenced.md)\n```")).toEqual(["missing.md"]);
    expect(headingAnchors("# The `flowgate` command\n## Node 24\n## Node 24")).toEqual(new Set(["the-flowgate-command", "node-24", "node-24-1"]));
  });

  it("docs/README.md links every page of docs/", () => {
    const index = new Set(linkTargets(read("docs/README.md")).map((t) => t.split("#")[0]));
    const pages = documentationFiles()
      .filter((f) => f.startsWith("docs/") && f !== "docs/README.md")
      .map((f) => path.basename(f));
    expect(pages.filter((p) => !index.has(p))).toEqual([]);
  });
});
