// The admin commands as an operator runs them, against a data directory.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../generators/spec-files.ts";
import { openDirectory } from "../../src/store/index.ts";
import { hashApiKey } from "../../src/surfaces/api-keys.ts";

const exec = promisify(execFile);
let dataDir: string;

async function flowgate(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const r = await exec(process.execPath, [path.join(ROOT, "bin", "flowgate.js"), ...args, "--data-dir", dataDir]);
    return { ...r, code: 0 };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code };
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "flowgate-admin-"));
});
afterAll(async () => rm(dataDir, { recursive: true, force: true }));

describe("flowgate keys, accounts, deployments", () => {
  it("manages accounts: create, tier, credits, subscription, list", async () => {
    expect((await flowgate("accounts", "create", "acme", "--tier", "pro", "--credits", "5")).code).toBe(0);
    expect(JSON.parse((await flowgate("accounts", "set-tier", "acme", "team")).stdout)).toMatchObject({ tier: "team", credits: 5 });
    expect(JSON.parse((await flowgate("accounts", "set-credits", "acme", "12.5")).stdout)).toMatchObject({ credits: 12.5 });
    expect(JSON.parse((await flowgate("accounts", "set-subscription", "acme", "inactive")).stdout)).toMatchObject({ subscription_active: false });
    const list = JSON.parse((await flowgate("accounts", "list")).stdout) as Array<{ name: string }>;
    expect(list.map((a) => a.name)).toEqual(["acme"]);
    const bad = await flowgate("accounts", "set-credits", "acme", "lots");
    expect(bad.code).toBe(2);
    expect((await flowgate("accounts", "set-tier", "nobody", "pro")).code).toBe(1);
  });

  it("creates a key shown once on stdout and stored only hashed", async () => {
    const created = await flowgate("keys", "create", "--account", "newco");
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    const dir = await openDirectory(dataDir);
    try {
      expect((await dir.findApiKey(hashApiKey(key)))?.account).toBe("newco");
      expect(await dir.getAccount("newco")).toMatchObject({ tier: "free", credits: 0 });
    } finally {
      await dir.close();
    }
    expect((await flowgate("keys", "revoke", key)).code).toBe(0);
    expect((await flowgate("keys", "revoke", key)).code).toBe(1);
  });

  it("manages deployments and refuses bad ids and states", async () => {
    expect(JSON.parse((await flowgate("deployments", "create", "demo", "--demo")).stdout)).toMatchObject({ id: "demo", demo: true, state: "ready" });
    expect((await flowgate("deployments", "create", "app", "--state", "provisioning")).code).toBe(0);
    expect(JSON.parse((await flowgate("deployments", "set-state", "app", "stopped")).stdout)).toMatchObject({ state: "stopped" });
    const listed = (await flowgate("deployments", "list")).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string });
    expect(listed.map((d) => d.id)).toEqual(["app", "demo"]);
    expect((await flowgate("deployments", "create", "Not_DNS")).code).toBe(2);
    expect((await flowgate("deployments", "set-state", "app", "exploded")).code).toBe(2);
  });
});
