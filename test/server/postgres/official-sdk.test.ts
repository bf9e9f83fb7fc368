// The official SDK's listing, cursor and logs exchanges, unchanged, on every surface with the
// server on PostgreSQL (a fresh schema per server).
import { useDatabase } from "../../hosted/hosted-server.ts";
import { onPostgres } from "../../postgres/pg.ts";

await onPostgres(
  () => useDatabase("postgres"),
  () => import("../official-sdk.test.ts"),
);
