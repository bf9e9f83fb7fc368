// The SQLite store's listing tests, unchanged, against PostgreSQL (a fresh schema per test).
import { onPostgres } from "../../postgres/pg.ts";
import { useStoreKind } from "../helpers.ts";

await onPostgres(
  () => useStoreKind("postgres"),
  () => import("../listing.test.ts"),
);
