// A server whose last run left small outputs' bytes in the database (committed with their job's
// end before their blob files were durable: pending_blobs), started on a full blob filesystem (a
// small tmpfs; root only, skipped elsewhere with the reason): it starts not ready instead of
// exiting, and writes the bytes back once space returns, serving the output then.
import { spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { blobPath } from "../../src/blobs/index.ts";
import { blake3Hex } from "../../src/domain/blake3.ts";
import { openStore } from "../../src/store/index.ts";
import { newJob, T0 } from "../store/helpers.ts";
import { Api, spawnCli, waitFor, type CliServer } from "../server/helpers.ts";

/** Mounts a 4 MiB tmpfs, or says why it cannot. */
function mountTmpfs(): { dir: string } | { reason: string } {
  if (process.platform !== "linux") return { reason: "tmpfs mounts need Linux" };
  if (process.getuid?.() !== 0) return { reason: "mounting a tmpfs needs root" };
  const dir = mkdtempSync(join(tmpdir(), "flowgate-full-blobs-"));
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", dir], { encoding: "utf8" });
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { reason: `mount -t tmpfs failed: ${(r.stderr || r.error?.message || "").trim()}` };
  }
  return { dir };
}

const mount = mountTmpfs();
const dataDir = mkdtempSync(join(tmpdir(), "flowgate-pending-data-"));
let server: CliServer | undefined;
afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGKILL");
    await server.exited;
  }
  if ("dir" in mount) {
    if (spawnSync("umount", [mount.dir]).status !== 0) spawnSync("umount", ["-l", mount.dir]);
    rmSync(mount.dir, { recursive: true, force: true });
  }
  rmSync(dataDir, { recursive: true, force: true });
});

describe.skipIf(!("dir" in mount))(`pending outputs on a full blob filesystem${"reason" in mount ? ` (skipped: ${mount.reason})` : ""}`, () => {
  it("starts not ready instead of exiting, and writes them back when space returns", async () => {
    const blobDir = join((mount as { dir: string }).dir, "blobs");
    // What a power loss leaves: a succeeded job whose output's bytes are only in pending_blobs.
    const bytes = randomBytes(64 * 1024);
    const key = await blake3Hex(bytes);
    const store = await openStore({ dataDir });
    const job = await store.createJob(newJob({ owner: "" }));
    await store.transitionJob(job.id, ["queued"], "running", { started_at: T0 + 1 });
    const asset = {
      id: randomUUID(),
      owner: "",
      job_id: job.id,
      node_id: "2",
      name: "kept_00001_.png",
      type: "image" as const,
      content_type: "image/png",
      size_bytes: bytes.length,
      blob_key: key,
      folder: "output" as const,
      file_path: "kept_00001_.png",
      created_at: T0 + 2,
    };
    await store.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: T0 + 2 }, [asset], [{ key, bytes }]);
    await store.close();
    // The blob filesystem full to the last block.
    const filler = join((mount as { dir: string }).dir, "filler");
    try {
      writeFileSync(filler, Buffer.alloc(8 * 1024 * 1024));
    } catch {
      // ENOSPC: full, as meant
    }

    server = await spawnCli(["--data-dir", dataDir, "--blob-dir", blobDir, "--port", "0", "--shutdown-grace", "0"]);
    const api = new Api(server.url);
    const notReady = await api.get("/readyz");
    expect(notReady.status).toBe(503);
    expect(notReady.body.checks.storage).toBe(false);
    expect(existsSync(blobPath(blobDir, key))).toBe(false);

    rmSync(filler);
    await waitFor(
      () => api.get("/readyz"),
      (r) => r.status === 200,
      "ready once the bytes fit",
      30_000,
    );
    expect(existsSync(blobPath(blobDir, key))).toBe(true);
    const content = await fetch(`${server.url}/api/v2/assets/${asset.id}/content`);
    expect(content.status).toBe(200);
    expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);
  });
});
