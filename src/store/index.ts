// Public surface of the persistence layer: the Store contract, its records and errors, and
// openStore, which picks the implementation from configuration.
import { PostgresDirectory } from "./postgres-directory.ts";
import type { PostgresOptions } from "./postgres-pool.ts";
import { PostgresStore } from "./postgres.ts";
import { SqliteStore } from "./sqlite.ts";
import type { SqliteStoreOptions } from "./sqlite.ts";
import { SqliteDirectory } from "./sqlite-directory.ts";
import type { Directory } from "./directory.ts";
import type { Store } from "./types.ts";

export type * from "./types.ts";
export {
  IDEMPOTENCY_TTL_MS,
  MAX_LABEL_FILTERS,
  JOB_STATUSES,
  LIVE_STATUSES,
  TERMINAL_STATUSES,
  assetRecordOf,
  isTerminalStatus,
  statusRank,
} from "./types.ts";
export { IdempotencyKeyReused, InvalidCursorError, LeaseLostError, QueueFullError, TerminalStatusError, UnknownJobError } from "./errors.ts";
export { isStorableWorkflowId } from "./input-checks.ts";
export { SQLITE_FILE_NAME } from "./sqlite.ts";
export type { SqliteStoreOptions } from "./sqlite.ts";
export type * from "./directory.ts";
export type * from "./job-leases.ts";
export { DEPLOYMENT_STATES } from "./directory.ts";
export type { PostgresOptions } from "./postgres-pool.ts";
export { PG_SCHEMA_VERSION } from "./postgres-schema.ts";
export { SCHEMA_VERSION as SQLITE_SCHEMA_VERSION } from "./sqlite-schema.ts";
// What the processes of a PostgreSQL deployment share beside the Store: the leases of leased
// dispatch, and for the event relay (src/relay) a pool, the status channel and the job row's reading.
export { PostgresLeases } from "./postgres-leases.ts";
export { openPostgresPool, PG_TYPES } from "./postgres-pool.ts";
export { PG_STATUS_CHANNEL } from "./postgres-schema.ts";
export { PG_NOTIFYING_SQL, payloadsParam } from "./postgres-queries.ts";
export { toJob as jobFromPostgresRow } from "./postgres.ts";

/** Where the store lives: the embedded SQLite file (default) or a PostgreSQL database. */
export type StoreOptions = ({ kind?: "sqlite" } & SqliteStoreOptions) | ({ kind: "postgres" } & PostgresOptions);

/** Opens the configured store, creating and migrating its schema as needed. */
export async function openStore(options: StoreOptions): Promise<Store> {
  if (options.kind === "postgres") return PostgresStore.open(options);
  return SqliteStore.open(options);
}

/** Where the directory lives: a data dir's SQLite file (a path) or a PostgreSQL database. */
export type DirectoryLocation = string | ({ kind: "postgres" } & PostgresOptions);

/** Opens the accounts, keys and deployments, creating and migrating the schema as needed. */
export async function openDirectory(location: DirectoryLocation): Promise<Directory> {
  return typeof location === "string" ? SqliteDirectory.open(location) : PostgresDirectory.open(location);
}
