// The HTTP layer gets the runtime's `Runtime` view: the services and narrow ports, never the
// store or the dispatcher (src/runtime/README.md). Only the server's start, which opens the
// runtime, holds the whole of it (`FullRuntime`); the CLI stops runs through its lifecycle.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { FullRuntime, Runtime } from "../../src/runtime/runtime.ts";

const SRC = path.resolve(import.meta.dirname, "../../src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : [],
  );
}

/** Lines of the files under `folders` (of src/) matching `pattern`, as "file:line: text". */
function linesMatching(folders: string[], pattern: RegExp): string[] {
  return folders.flatMap((folder) =>
    sourceFiles(path.join(SRC, folder)).flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .flatMap((line, i) => (pattern.test(line) ? [`${path.relative(SRC, file)}:${i + 1}: ${line.trim()}`] : [])),
    ),
  );
}

describe("composition root", () => {
  it("the server and the CLI never read the runtime's store or dispatcher", () => {
    // Read as a property, or destructured from a runtime.
    const reads = linesMatching(["server", "cli"], /\bruntime\??\.(store|dispatcher)\b|\{[^}]*\b(store|dispatcher)\b[^}]*\}\s*=\s*[\w.]*runtime\b/);
    expect(reads).toEqual([]);
  });

  it("only the server's start holds the whole runtime", () => {
    const holders = linesMatching(["server"], /\bFullRuntime\b/).filter((l) => !l.startsWith(`server${path.sep}start.ts:`));
    expect(holders).toEqual([]);
  });

  it("the scan sees the runtime's readers", () => {
    // A renamed folder or variable must not leave the checks above judging nothing.
    expect(linesMatching(["server"], /\bruntime\.(queue|jobs|assets)\b/).length).toBeGreaterThan(10);
  });

  it("the HTTP view has no store and no dispatcher (typecheck)", () => {
    const view = (r: FullRuntime): Runtime => r;
    // @ts-expect-error the store is not part of the HTTP layer's view
    const store = (r: Runtime) => r.store;
    // @ts-expect-error nor is the dispatcher
    const dispatcher = (r: Runtime) => r.dispatcher;
    expect([view, store, dispatcher].every((f) => typeof f === "function")).toBe(true);
  });
});
