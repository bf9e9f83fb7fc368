import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SQLITE_FILE_NAME } from "../../src/store/index.ts";
import { Checkpointer } from "../../src/store/checkpointer.ts";
import { newJob, openTestStore, type TestStore } from "./helpers.ts";

let t: TestStore;
beforeEach(async () => {
  t = await openTestStore();
});
afterEach(async () => {
  await t.cleanup();
});

const walPages = () => Math.floor(statSync(join(t.dataDir, `${SQLITE_FILE_NAME}-wal`)).size / 4096);

describe("WAL checkpoints off the event loop", () => {
  it("move committed pages into the database file while the store is open, far below the event loop's own threshold", async () => {
    // Automatic checkpoints on the event loop start only at 16,000 pages: without the worker the
    // database file would keep its empty size until close, with every page in the WAL.
    for (let round = 0; round < 40; round++) {
      await Promise.all(Array.from({ length: 50 }, () => t.store.createJob(newJob())));
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(statSync(join(t.dataDir, SQLITE_FILE_NAME)).size).toBeGreaterThan(200_000);
    expect(walPages()).toBeLessThan(16_000);
    const db = t.raw();
    expect(db.prepare("SELECT count(*) AS n FROM jobs").get()).toEqual({ n: 2000 });
  });

  it("reports a worker that cannot run, once, and stops cleanly otherwise", async () => {
    const failures: unknown[] = [];
    const broken = Checkpointer.start({ path: join(t.dataDir, "no-such-dir", "x.sqlite"), onFailure: (e) => failures.push(e) });
    for (let i = 0; i < 100 && failures.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(failures).toHaveLength(1);
    await broken.stop(); // already gone: returns at once

    const working = Checkpointer.start({ path: join(t.dataDir, SQLITE_FILE_NAME), intervalMs: 10, onFailure: (e) => failures.push(e) });
    await t.store.createJob(newJob());
    for (let i = 0; i < 100 && working.last === null; i++) await new Promise((r) => setTimeout(r, 10));
    expect(working.last).not.toBeNull();
    await working.stop();
    expect(failures).toHaveLength(1);
  });
});
