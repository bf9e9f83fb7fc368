// Every folder of test/ with tests belongs to exactly one project of vitest.config.ts: a folder
// left out would never run.
import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { TEST_PROJECTS } from "../../vitest.config.ts";

const TEST_DIR = path.resolve(import.meta.dirname, "..");

function hasTests(dir: string): boolean {
  return readdirSync(dir, { withFileTypes: true }).some((e) => (e.isDirectory() ? hasTests(path.join(dir, e.name)) : e.name.endsWith(".test.ts")));
}

describe("test projects", () => {
  it("hold every folder of test/ that has tests, each once", () => {
    const listed: string[] = Object.values(TEST_PROJECTS).flat();
    const folders = readdirSync(TEST_DIR, { withFileTypes: true })
      .filter((e) => e.isDirectory() && hasTests(path.join(TEST_DIR, e.name)))
      .map((e) => e.name)
      .sort();
    expect([...listed].sort()).toEqual(folders);
  });
});
