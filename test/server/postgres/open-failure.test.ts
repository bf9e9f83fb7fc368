// A runtime whose opening fails part-way (the blob store, after the PostgreSQL store and leases
// opened their connections) closes what it had opened: an embedder that catches the failure and
// goes on keeps no connection of it. Counted on a database of the test's own, which nothing else uses.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/config.ts";
import { EmbeddedEngine } from "../../../src/engine/embedded-engine.ts";
import { engineAdapter } from "../../../src/jobs/engine-adapter.ts";
import { openRuntime } from "../../../src/runtime/runtime.ts";
import { adminQuery, postgresUnavailable, TEST_DATABASE_URL } from "../../postgres/pg.ts";

const unavailable = await postgresUnavailable();
const database = `fg_test_open_${randomBytes(4).toString("hex")}`;
let dataDir = "";

afterEach(async () => {
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  await adminQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
});

describe.skipIf(unavailable !== null)("a runtime that fails to open on PostgreSQL", () => {
  it("closes the connections it opened before the failure", async () => {
    await adminQuery(`CREATE DATABASE ${database}`);
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/${database}`;
    dataDir = await mkdtemp(join(tmpdir(), "flowgate-open-failure-"));
    // An invalid bucket name fails the blob store's opening, after the store's migrations ran.
    const config = loadConfig(["--data-dir", dataDir, "--database-url", url.href, "--blob-store", "s3://B_/p"], {});
    await expect(openRuntime(config, { engine: engineAdapter(new EmbeddedEngine({})) })).rejects.toThrow();
    const [row] = await adminQuery(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`, [database]);
    expect(row?.n).toBe(0);
  });
});
