// The name follow-up lines give the command, and the next-page hint of `flowgate list`.
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { invokedAs, shellWord } from "../../src/cli/invocation.ts";
import { nextPageCommand } from "../../src/cli/jobs-commands.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flowgate-invocation-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("invokedAs", () => {
  it("is `flowgate` when the flowgate on PATH is this script, `npx flowgate` from a checkout or under npx", async () => {
    const script = join(dir, "flowgate.js");
    await writeFile(script, "");
    const bin = join(dir, "bin");
    await mkdir(bin);
    expect(invokedAs({ PATH: bin }, script)).toBe("npx flowgate");
    await symlink(script, join(bin, "flowgate"));
    expect(invokedAs({ PATH: `/nonexistent:${bin}` }, script)).toBe("flowgate");
    expect(invokedAs({ PATH: bin, npm_command: "exec" }, script)).toBe("npx flowgate");
    expect(invokedAs({ PATH: bin }, join(dir, "other.js"))).toBe("npx flowgate");
  });
});

describe("the next-page hint", () => {
  it("keeps status, labels, page size and an explicit server, quoted for a shell", () => {
    expect(nextPageCommand({ status: "failed", labels: { project: "a b", k: "v" }, limit: 5, baseUrl: "http://h:1" }, "c1", "npx flowgate")).toBe(
      "npx flowgate list --status failed --label 'project=a b' --label k=v --limit 5 --base-url http://h:1 --cursor c1",
    );
    expect(nextPageCommand({}, "abc", "flowgate")).toBe("flowgate list --cursor abc");
    expect(shellWord("it's")).toBe(`'it'\\''s'`);
  });
});
