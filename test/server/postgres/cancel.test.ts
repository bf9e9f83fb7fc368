// The server's cancel tests, unchanged, with the server on PostgreSQL (a fresh schema per server).
import { onPostgres } from "../../postgres/pg.ts";
import { useDatabase } from "../helpers.ts";

await onPostgres(
  () => useDatabase("postgres"),
  () => import("../cancel.test.ts"),
);
