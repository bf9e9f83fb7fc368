// Blob files a crash left without a record (bytes written, record never): a server sweeps them at
// start (and with its reaper), once older than a safe age, and counts them in
// flowgate_orphan_blobs_removed_total. Files a record or a pending output names stay, and so do
// young ones (their record may be on its way).
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { blobPath } from "../../src/blobs/index.ts";
import { blake3Hex } from "../../src/domain/blake3.ts";
import { openStore } from "../../src/store/index.ts";
import { newJob, T0 } from "../store/helpers.ts";
import { spawnCli, waitFor, type CliServer } from "../server/helpers.ts";

const dataDir = mkdtempSync(join(tmpdir(), "flowgate-orphans-"));
const blobDir = join(dataDir, "blob-files");
let server: CliServer | undefined;
afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGKILL");
    await server.exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/** A blob file of random bytes, last touched `ageMs` ago; its key. */
async function plant(ageMs: number): Promise<string> {
  const bytes = randomBytes(1024);
  const key = await blake3Hex(bytes);
  const path = blobPath(blobDir, key);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, bytes);
  const at = new Date(Date.now() - ageMs);
  utimesSync(path, at, at);
  return key;
}

describe("the orphan blob sweep", () => {
  it("removes at start the old blob files nothing names, keeps the named and the young, and counts what it removed", async () => {
    const HOURS = 3 * 3_600_000;
    const orphan = await plant(HOURS);
    const young = await plant(0);
    const recorded = await plant(HOURS);
    const kept = await plant(HOURS);
    const store = await openStore({ dataDir });
    await store.addAsset({
      id: randomUUID(),
      owner: "",
      name: "in.png",
      content_type: "image/png",
      size_bytes: 1024,
      blob_key: recorded,
      folder: "input",
      created_at: T0,
    });
    // An output committed with its end, its bytes kept in the database too: named by its record.
    const job = await store.createJob(newJob({ owner: "" }));
    await store.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 1 });
    const output = {
      id: randomUUID(),
      owner: "",
      job_id: job.id,
      name: "o.png",
      content_type: "image/png",
      size_bytes: 1024,
      blob_key: kept,
      folder: "output" as const,
      created_at: T0 + 2,
    };
    await store.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: T0 + 2 }, [output], [{ key: kept, bytes: new Uint8Array(1024) }]);
    await store.close();

    server = await spawnCli(["--data-dir", dataDir, "--blob-dir", blobDir, "--port", "0", "--shutdown-grace", "0"]);
    await waitFor(
      () => existsSync(blobPath(blobDir, orphan)),
      (present) => !present,
      "the orphan swept",
    );
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/^flowgate_orphan_blobs_removed_total 1$/m);
    for (const key of [young, recorded, kept]) expect(existsSync(blobPath(blobDir, key)), key).toBe(true);
  });
});
