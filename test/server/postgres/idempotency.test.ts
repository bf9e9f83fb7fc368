// The server's idempotency tests, unchanged, with the server on PostgreSQL (a fresh schema per server).
import { onPostgres } from "../../postgres/pg.ts";
import { useDatabase } from "../helpers.ts";

await onPostgres(
  () => useDatabase("postgres"),
  () => import("../idempotency.test.ts"),
);
