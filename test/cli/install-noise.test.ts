// What a checkout prints besides the answer: `npx` under the machine's older npm (the project runs on
// its pinned Node 24) and the pages' build that `npm install` runs. Engine warnings and Vite's
// "can't be bundled" notice were printed on every call.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./cli.ts";

/** The machine's own Node and npx, found on PATH without the Node 24 that scripts/ensure-node.sh or npm put first. */
const SYSTEM_BIN = "/usr/bin";
const systemMajor = Number(spawnSync(`${SYSTEM_BIN}/node`, ["-p", "process.versions.node.split('.')[0]"], { encoding: "utf8" }).stdout || 0);
const olderNode = systemMajor > 0 && systemMajor < 24 && spawnSync(`${SYSTEM_BIN}/npx`, ["--version"]).status === 0;

describe("a checkout's commands print no install noise", () => {
  it.skipIf(!olderNode)(`npx flowgate --version under the machine's Node ${systemMajor} prints the version alone`, () => {
    // npx installs the checkout into its own cache on the first call (then npm checks the engines); a
    // fresh cache makes every run of this test that first call. Offline: the tests never need the registry.
    const cache = mkdtempSync(path.join(tmpdir(), "flowgate-npx-cache-"));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${SYSTEM_BIN}:/bin` };
      for (const key of Object.keys(env)) if (/^npm_config_/i.test(key)) delete env[key];
      Object.assign(env, { npm_config_cache: cache, npm_config_offline: "true" });
      const r = spawnSync(`${SYSTEM_BIN}/npx`, ["flowgate", "--version"], { cwd: ROOT, env, encoding: "utf8" });
      expect(r.status).toBe(0);
      expect(r.stderr).not.toContain("EBADENGINE");
      expect(`${r.stdout}${r.stderr}`.trim()).toMatch(/^flowgate \d+\.\d+\.\d+$/);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it("the pages' build (as npm install runs it) prints no warning", () => {
    const out = mkdtempSync(path.join(tmpdir(), "flowgate-ui-"));
    try {
      const r = spawnSync(
        process.execPath,
        [path.join(ROOT, "node_modules/vite/bin/vite.js"), "build", "--config", "ui/vite.config.ts", "--logLevel", "warn", "--outDir", out],
        { cwd: ROOT, encoding: "utf8" },
      );
      expect(r.status).toBe(0);
      expect(`${r.stdout}${r.stderr}`.trim()).toBe("");
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
