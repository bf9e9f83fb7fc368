// Public surface of the persistence layer: the Store contract, its records and errors, and
// openStore, which picks the implementation from configuration.
import { SqliteStore } from "./sqlite.ts";
import type { SqliteStoreOptions } from "./sqlite.ts";
import type { Store } from "./types.ts";

export type * from "./types.ts";
export { IDEMPOTENCY_TTL_MS, JOB_STATUSES, LIVE_STATUSES, TERMINAL_STATUSES, isTerminalStatus } from "./types.ts";
export { IdempotencyKeyReused, InvalidCursorError, TerminalStatusError, UnknownJobError } from "./errors.ts";
export { SQLITE_FILE_NAME } from "./sqlite.ts";
export type { SqliteStoreOptions } from "./sqlite.ts";
export type * from "./directory.ts";
export { DEPLOYMENT_STATES } from "./directory.ts";
export { openDirectory } from "./sqlite-directory.ts";

/** Where the store lives: the embedded SQLite file (default) or a PostgreSQL server. */
export type StoreOptions = ({ kind?: "sqlite" } & SqliteStoreOptions) | { kind: "postgres"; url: string };

/** Opens the configured store, creating and migrating its schema as needed. */
export async function openStore(options: StoreOptions): Promise<Store> {
  if (options.kind === "postgres") throw new Error("the PostgreSQL store is not implemented yet");
  return SqliteStore.open(options);
}
