// The account directory: accounts, hashed keys, deployments, on a real SQLite file.
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDirectory, type Directory } from "../../src/store/index.ts";
import { generateApiKey, hashApiKey, keyPrefix } from "../../src/surfaces/api-keys.ts";

let dir: string;
let d: Directory;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "flowgate-dir-"));
  d = await openDirectory(dir);
});
afterEach(async () => {
  await d.close();
  await rm(dir, { recursive: true, force: true });
});

describe("directory", () => {
  it("creates an account once and updates tier, credits and subscription", async () => {
    const a = await d.ensureAccount("acme", { tier: "free", credits: 10, now: 1 });
    expect(a).toMatchObject({ name: "acme", tier: "free", credits: 10, subscription_active: true });
    expect(await d.ensureAccount("acme", { tier: "pro", credits: 99, now: 2 })).toEqual(a);
    expect(await d.updateAccount("acme", { tier: "pro" })).toMatchObject({ tier: "pro", credits: 10 });
    expect(await d.updateAccount("acme", { subscription_active: false })).toMatchObject({ subscription_active: false, tier: "pro" });
    expect(await d.chargeCredits("acme", 2.5)).toMatchObject({ credits: 7.5 });
    expect(await d.updateAccount("nobody", { credits: 1 })).toBeNull();
  });

  it("stores keys only as digests, finds live ones and revokes", async () => {
    await d.ensureAccount("acme", { tier: "free", credits: 1, now: 1 });
    const key = generateApiKey();
    expect(key).toMatch(/^fg_[A-Za-z0-9_-]{43}$/);
    await d.addApiKey({ key_hash: hashApiKey(key), account: "acme", prefix: keyPrefix(key), created_at: 1, revoked_at: null });
    expect((await d.findApiKey(hashApiKey(key)))?.account).toBe("acme");
    expect(await d.findApiKey(hashApiKey(key + "x"))).toBeNull();
    await d.close();
    for (const f of await readdir(dir)) expect((await readFile(path.join(dir, f))).includes(Buffer.from(key))).toBe(false);
    d = await openDirectory(dir);
    expect(await d.revokeApiKey(hashApiKey(key), 2)).toBe(true);
    expect(await d.revokeApiKey(hashApiKey(key), 3)).toBe(false);
    expect(await d.findApiKey(hashApiKey(key))).toBeNull();
  });

  it("keeps deployments and their states", async () => {
    await d.createDeployment({ id: "demo", state: "ready", demo: true, created_at: 1 });
    await d.createDeployment({ id: "acme-1", state: "provisioning", demo: false, created_at: 2 });
    expect((await d.setDeploymentState("acme-1", "stopped"))?.state).toBe("stopped");
    expect((await d.listDeployments()).map((x) => [x.id, x.state, x.demo])).toEqual([
      ["acme-1", "stopped", false],
      ["demo", "ready", true],
    ]);
    await expect(d.createDeployment({ id: "demo", state: "ready", demo: false, created_at: 3 })).rejects.toThrow();
    expect(await d.setDeploymentState("none", "ready")).toBeNull();
  });
});
