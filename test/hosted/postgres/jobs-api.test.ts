// The hosted job API tests, unchanged, with the server on PostgreSQL (a fresh schema per server).
import { onPostgres } from "../../postgres/pg.ts";
import { useDatabase } from "../hosted-server.ts";

await onPostgres(
  () => useDatabase("postgres"),
  () => import("../jobs-api.test.ts"),
);
