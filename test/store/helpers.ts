// Shared fixtures of the store tests: a real SQLite file in a fresh temp dir per test.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { randomUUID } from "node:crypto";
import { SQLITE_FILE_NAME, openStore } from "../../src/store/index.ts";
import type { NewAsset, NewJob, Store } from "../../src/store/index.ts";

export const HOUR = 3_600_000;
export const T0 = 1_800_000_000_000;

/** A store on a fresh temp dir, with reopen and raw SQL access; `cleanup` closes and removes everything. */
export interface TestStore {
  store: Store;
  dataDir: string;
  reopen(): Promise<Store>;
  raw(): DatabaseSync;
  cleanup(): Promise<void>;
}

export async function openTestStore(): Promise<TestStore> {
  const dataDir = await mkdtemp(join(tmpdir(), "flowgate-store-"));
  const raws: DatabaseSync[] = [];
  const ctx: TestStore = {
    store: await openStore({ dataDir }),
    dataDir,
    async reopen() {
      await ctx.store.close();
      ctx.store = await openStore({ dataDir });
      return ctx.store;
    },
    raw() {
      const db = new DatabaseSync(join(dataDir, SQLITE_FILE_NAME), { timeout: 5000 });
      raws.push(db);
      return db;
    },
    async cleanup() {
      for (const db of raws) if (db.isOpen) db.close();
      await ctx.store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return ctx;
}

let counter = 0;

/** A queued-job input with unique id; fields may be overridden. */
export function newJob(overrides: Partial<NewJob> = {}): NewJob {
  counter++;
  return {
    id: randomUUID(),
    owner: "alice",
    created_at: T0 + counter,
    expires_at: T0 + 24 * HOUR,
    workflow: { "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8 } }, "2": { class_type: "SaveImage", inputs: { images: ["1", 0] } } },
    output_node_ids: ["2"],
    ...overrides,
  };
}

/** A blob key made of one repeated hex digit. */
export const blobKey = (digit: string) => digit.repeat(64);

/** An asset input with unique id; an output of `jobId` when given, else an upload. */
export function newAsset(overrides: Partial<NewAsset> = {}): NewAsset {
  counter++;
  return {
    id: randomUUID(),
    owner: "alice",
    name: `ComfyUI_${String(counter).padStart(5, "0")}_.png`,
    content_type: "image/png",
    size_bytes: 100 + counter,
    blob_key: blobKey("a"),
    folder: "output",
    created_at: T0 + counter,
    ...overrides,
  };
}
