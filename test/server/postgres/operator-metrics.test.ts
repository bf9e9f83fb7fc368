// The operator's metrics tests, unchanged, with the server on PostgreSQL (busy workers come from the leases there).
import { onPostgres } from "../../postgres/pg.ts";
import { useDatabase } from "../helpers.ts";

await onPostgres(
  () => useDatabase("postgres"),
  () => import("../operator-metrics.test.ts"),
);
