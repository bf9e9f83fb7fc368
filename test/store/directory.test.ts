// The account directory: accounts, hashed keys, deployments, on a real SQLite file (or a
// PostgreSQL schema, under test/store/postgres/).
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDirectory, type Directory, type DirectoryLocation } from "../../src/store/index.ts";
import { generateApiKey, hashApiKey, keyPrefix } from "../../src/surfaces/api-keys.ts";
import { TEST_DATABASE_URL, adminQuery, dropTestSchema, testSchemaName } from "../postgres/pg.ts";
import { storeKind } from "./helpers.ts";

const onPostgres = storeKind() === "postgres";
let dir: string;
let location: DirectoryLocation;
let d: Directory;

beforeEach(async () => {
  dir = onPostgres ? testSchemaName() : await mkdtemp(path.join(tmpdir(), "flowgate-dir-"));
  location = onPostgres ? { kind: "postgres", url: TEST_DATABASE_URL, schema: dir } : dir;
  d = await openDirectory(location);
});
afterEach(async () => {
  await d.close();
  if (onPostgres) await dropTestSchema(dir);
  else await rm(dir, { recursive: true, force: true });
});

/** Everything the directory wrote: the database files, or every row of the schema's tables as text. */
async function storedBytes(): Promise<Buffer[]> {
  if (!onPostgres) return Promise.all((await readdir(dir)).map((f) => readFile(path.join(dir, f))));
  const rows = await adminQuery(
    `SELECT t::text AS row FROM ${dir}.accounts t UNION ALL SELECT t::text FROM ${dir}.api_keys t UNION ALL SELECT t::text FROM ${dir}.deployments t`,
  );
  return rows.map((r) => Buffer.from(String(r.row)));
}

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
    expect(await d.findApiKey(hashApiKey(`${key}x`))).toBeNull();
    await d.close();
    for (const bytes of await storedBytes()) expect(bytes.includes(Buffer.from(key))).toBe(false);
    d = await openDirectory(location);
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
