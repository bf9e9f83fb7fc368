// Shared fixtures of the store tests: a real SQLite file in a fresh temp dir per test, or, when
// a test file runs under test/store/postgres/, a fresh PostgreSQL schema per test. One suite,
// two stores: the tests reach the database only through the Store and `sql`.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { randomUUID } from "node:crypto";
import pg from "pg";
import { SQLITE_FILE_NAME, openStore } from "../../src/store/index.ts";
import type { NewAsset, NewJob, Store, StoreOptions } from "../../src/store/index.ts";
import { PG_TYPES } from "../../src/store/postgres-pool.ts";
import { TEST_DATABASE_URL, dropTestSchema, testSchemaName } from "../postgres/pg.ts";

/** The store implementations the suite runs against. */
export type StoreKind = "sqlite" | "postgres";

let kind: StoreKind = "sqlite";

/** Selects the store of the test files imported after this call (the PostgreSQL wrappers call it). */
export function useStoreKind(next: StoreKind): void {
  kind = next;
}

/** The store this test file runs against. */
export function storeKind(): StoreKind {
  return kind;
}

export const HOUR = 3_600_000;
export const T0 = 1_800_000_000_000;

/** A fresh store with reopen and raw SQL access; `cleanup` closes and removes everything. */
export interface TestStore {
  kind: StoreKind;
  store: Store;
  /** The SQLite data dir ("" on PostgreSQL). */
  dataDir: string;
  /** What openStore takes to open this database again (another connection, a worker thread). */
  options: StoreOptions;
  reopen(): Promise<Store>;
  /** One SQL statement on a separate connection, `?` placeholders; the rows it returns. */
  sql(text: string, ...params: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** The SQLite file on a separate connection (SQLite-only tests). */
  raw(): DatabaseSync;
  cleanup(): Promise<void>;
}

export async function openTestStore(): Promise<TestStore> {
  return kind === "postgres" ? openPostgresTestStore() : openSqliteTestStore();
}

async function openSqliteTestStore(): Promise<TestStore> {
  const dataDir = await mkdtemp(join(tmpdir(), "flowgate-store-"));
  const raws: DatabaseSync[] = [];
  const options: StoreOptions = { dataDir };
  const ctx: TestStore = {
    kind: "sqlite",
    store: await openStore(options),
    dataDir,
    options,
    async reopen() {
      await ctx.store.close();
      ctx.store = await openStore(options);
      return ctx.store;
    },
    async sql(text, ...params) {
      const statement = ctx.raw().prepare(text);
      if (statement.columns().length > 0) return statement.all(...(params as never[]));
      statement.run(...(params as never[]));
      return [];
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

async function openPostgresTestStore(): Promise<TestStore> {
  const schema = testSchemaName();
  const options: StoreOptions = { kind: "postgres", url: TEST_DATABASE_URL, schema, maxConnections: 4 };
  let client: pg.Client | null = null;
  let store: Store;
  try {
    store = await openStore(options);
  } catch (error) {
    await dropTestSchema(schema);
    throw error;
  }
  const ctx: TestStore = {
    kind: "postgres",
    store,
    dataDir: "",
    options,
    async reopen() {
      await ctx.store.close();
      ctx.store = await openStore(options);
      return ctx.store;
    },
    async sql(text, ...params) {
      if (client === null) {
        client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}`, types: PG_TYPES });
        await client.connect();
      }
      let n = 0;
      return (
        await client.query(
          text.replace(/\?/g, () => `$${++n}`),
          params,
        )
      ).rows;
    },
    raw() {
      throw new Error("raw() is the SQLite file; this test runs on PostgreSQL");
    },
    async cleanup() {
      await (client as pg.Client | null)?.end().catch(() => undefined);
      await ctx.store.close();
      await dropTestSchema(schema);
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
