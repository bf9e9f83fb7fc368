// The version flowgate reports (the client's User-Agent, the hosted system_stats) is read from
// the package.json of the package the code runs from, in a checkout and in each package's
// compiled layout (dist/src/domain/ under the package root), never written by hand.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { FlowgateClient } from "../../src/index.ts";
import { packageVersionFrom, VERSION } from "../../src/domain/version.ts";
import { startTestServer } from "../hosted/hosted-server.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const rootVersion = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const work = mkdtempSync(path.join(tmpdir(), "flowgate-version-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A package tree as a build lays it out: `<root>/package.json` and the module at dist/src/domain/version.ts. */
function packageTree(name: string, manifest: Record<string, unknown>, between: Record<string, unknown> | null = null): string {
  const root = path.join(work, name);
  const domain = path.join(root, "dist", "src", "domain");
  mkdirSync(domain, { recursive: true });
  writeFileSync(path.join(root, "package.json"), JSON.stringify(manifest));
  if (between) writeFileSync(path.join(root, "dist", "package.json"), JSON.stringify(between));
  copyFileSync(path.join(ROOT, "src", "domain", "version.ts"), path.join(domain, "version.ts"));
  return domain;
}

describe("the package version", () => {
  it("in a checkout is the root package.json's", () => {
    expect(VERSION).toBe(rootVersion);
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("in the client package's layout is that package's own version", async () => {
    const domain = packageTree("client", { name: "@flowgate/client", version: "9.8.7" });
    const module = (await import(pathToFileURL(path.join(domain, "version.ts")).href)) as { VERSION: string };
    expect(module.VERSION).toBe("9.8.7");
  });

  it("skips a package.json of another name on the way up (a consumer's, a build folder's)", () => {
    const domain = packageTree("server", { name: "flowgate", version: "3.2.1" }, { name: "something-else", version: "0.0.1" });
    expect(packageVersionFrom(domain)).toBe("3.2.1");
  });

  it("says so when no flowgate package.json is above the module", () => {
    const lonely = path.join(work, "lonely", "dist");
    mkdirSync(lonely, { recursive: true });
    expect(() => packageVersionFrom(path.parse(lonely).root)).toThrow(/no package.json of flowgate/);
  });

  it("is the v2 client's User-Agent", async () => {
    const agents: Array<string | null> = [];
    const client = new FlowgateClient({
      baseUrl: "http://flowgate.test",
      fetch: async (request: Request) => {
        agents.push(request.headers.get("user-agent"));
        return Response.json({ error: { code: "not_found", message: "no such job" } }, { status: 404 });
      },
    });
    await expect(client.get("0190b2a4-0000-7000-8000-000000000000")).rejects.toThrow();
    expect(agents[0]).toBe(`flowgate-client/${rootVersion}`);
  });

  it("is the hosted interface's comfyui_version", async () => {
    const server = await startTestServer();
    try {
      const stats = (await (await fetch(`${server.url}/api/system_stats`)).json()) as { system: { comfyui_version: string } };
      expect(stats.system.comfyui_version).toBe(`flowgate ${rootVersion}`);
    } finally {
      await server.stop();
    }
  });
});
