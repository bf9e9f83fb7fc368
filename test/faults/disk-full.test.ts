// A real full disk: the data directory on a small tmpfs (root only; skipped elsewhere, with the
// reason). Uploads and outputs that do not fit fail with 507 `insufficient_storage` and leave
// no partial file, /readyz says `storage: false`, a running job that cannot save ends `failed`
// with `insufficient_storage`, cancels and deletes still work, and once space returns the queue
// resumes by itself.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { isOutOfSpace } from "../../src/datadir/space.ts";
import { openStore, SQLITE_FILE_NAME } from "../../src/store/index.ts";
import { delayGraph, expectError, imageGraph, startTestServer, upload, waitFor, type TestServer } from "../server/helpers.ts";

const MiB = 1024 * 1024;

/** Mounts an 8 MiB tmpfs, or says why it cannot. */
function mountTmpfs(): { dir: string } | { reason: string } {
  if (process.platform !== "linux") return { reason: "tmpfs mounts need Linux" };
  if (process.getuid?.() !== 0) return { reason: "mounting a tmpfs needs root" };
  const dir = mkdtempSync(join(tmpdir(), "flowgate-full-"));
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", dir], { encoding: "utf8" });
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { reason: `mount -t tmpfs failed: ${(r.stderr || r.error?.message || "").trim()}` };
  }
  return { dir };
}

const mount = mountTmpfs();
let server: TestServer | undefined;
afterAll(async () => {
  await server?.stop().catch(() => undefined);
  if ("dir" in mount) {
    // Always unmounted, lazily if something still holds it.
    if (spawnSync("umount", [mount.dir]).status !== 0) spawnSync("umount", ["-l", mount.dir]);
    rmSync(mount.dir, { recursive: true, force: true });
  }
});

/** The sampler's 1024x1024 picture, saved only after `seconds`: an output far bigger than what is left. */
function bigOutputAfter(seconds: number, seed: number): Record<string, unknown> {
  return {
    "1": { class_type: "FlowgateSampler", inputs: { seed, steps: 1, width: 1024, height: 1024 } },
    "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds } },
    "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "big" } },
  };
}

describe.skipIf(!("dir" in mount))(`a full disk${"reason" in mount ? ` (skipped: ${mount.reason})` : ""}`, () => {
  it("the store never answers with a write that the full disk rolled back", async () => {
    const root = (mount as { dir: string }).dir;
    const dir = join(root, "store");
    const filler = join(root, "filler");
    const store = await openStore({ dataDir: dir });
    const reader = new DatabaseSync(join(dir, SQLITE_FILE_NAME));
    try {
      const now = Date.now();
      const jobs = [];
      for (let i = 0; i < 5; i++) {
        jobs.push(
          await store.createJob({
            id: `job-${i}`,
            owner: "",
            created_at: now,
            expires_at: now + 3_600_000,
            workflow: { pad: "x".repeat(20_000) },
            output_node_ids: [],
          }),
        );
      }
      // An open read pins the WAL, so new frames must grow it; then nothing is left to grow into.
      reader.exec("BEGIN");
      reader.prepare("SELECT count(*) FROM jobs").get();
      try {
        writeFileSync(filler, Buffer.alloc(16 * MiB));
      } catch (err) {
        expect((err as { code?: string }).code).toBe("ENOSPC");
      }
      let refused = 0;
      for (const job of jobs) {
        const moved = await store.transitionJob(job.id, ["queued"], "running", { started_at: now }).catch((err: unknown) => {
          expect(isOutOfSpace(err), String(err)).toBe(true);
          refused++;
          return undefined;
        });
        // What the store answered is what it holds.
        expect((await store.getJob(job.id))!.status).toBe(moved ? "running" : "queued");
      }
      expect(refused).toBeGreaterThan(0);
    } finally {
      reader.close();
      rmSync(filler, { force: true });
      await store.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("fails what does not fit with 507, reports it, keeps cancels and deletes working, and resumes when space returns", async () => {
    const dataDir = join((mount as { dir: string }).dir, "data");
    mkdirSync(dataDir);
    server = await startTestServer({ flags: ["--concurrency", "2"], config: { dataDir, spaceReserveBytes: MiB } });
    const { api } = server;
    const saving = await api.submit(bigOutputAfter(1.5, 7));
    const held = await api.submit(delayGraph(600));
    await api.waitJob(held.id, (j) => j.status === "running", "running");
    const waiting = await api.submit(imageGraph("after-space-returns"));
    expect(waiting.status).toBe("queued");

    // Fill the disk with uploads: each is stored whole, or refused with 507.
    const uploaded: string[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await upload(api, [{ name: "file", file: randomBytes(512 * 1024) }]);
      if (res.status === 507) {
        expectError(res, 507, "insufficient_storage");
        break;
      }
      expect(res.status, res.text).toBe(201);
      uploaded.push(res.body.id);
    }
    expect(uploaded.length).toBeGreaterThan(0);
    expect(readdirSync(join(dataDir, "blobs", "tmp")), "no partial upload is left").toEqual([]);

    const ready = await api.get("/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.checks.storage).toBe(false);

    // While short: new data is refused at once, the queued job keeps its place.
    expectError(await upload(api, [{ name: "file", file: randomBytes(1000) }]), 507, "insufficient_storage");
    expectError(await api.post("/api/v2/jobs", { workflow: imageGraph("refused") }), 507, "insufficient_storage");
    expect((await api.job(waiting.id)).queue_position).toBe(0);

    // The job that reaches SaveImage now fails cleanly; the cancel of the other one ends.
    const failed = await api.waitTerminal(saving.id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatchObject({ code: "insufficient_storage", node_id: "3", class_type: "SaveImage" });
    expect(failed.outputs).toEqual([]);
    expect((await api.post(`/api/v2/jobs/${held.id}/cancel`)).body.status).toBe("canceling");
    expect((await api.waitTerminal(held.id)).status).toBe("canceled");
    expect((await api.job(waiting.id)).status).toBe("queued");

    // Deletes work on the full disk, and free the space: the server recovers by itself.
    for (const id of uploaded) expect((await api.request("DELETE", `/api/v2/assets/${id}`)).status).toBe(204);
    await waitFor(
      () => api.get("/readyz"),
      (r) => r.status === 200,
      "ready again",
    );
    expect((await api.waitTerminal(waiting.id)).status).toBe("succeeded");
    expect((await upload(api, [{ name: "file", file: randomBytes(1000) }])).status).toBe(201);
    expect(readdirSync(join(dataDir, "blobs", "tmp"))).toEqual([]);
    await server.stop();
    server = undefined;
  });
});
