// The SQLite store's older-schema test, unchanged, against PostgreSQL (a schema of its own).
import { onPostgres } from "../../postgres/pg.ts";
import { useStoreKind } from "../helpers.ts";

await onPostgres(
  () => useStoreKind("postgres"),
  () => import("../older-schema.test.ts"),
);
