// The schema-against-enums tests, unchanged, against PostgreSQL's migrated schema (a fresh schema per test).
import { onPostgres } from "../../postgres/pg.ts";
import { useStoreKind } from "../helpers.ts";

await onPostgres(
  () => useStoreKind("postgres"),
  () => import("../schema-enums.test.ts"),
);
