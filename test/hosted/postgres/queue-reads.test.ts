// The queue reads' test, unchanged, with the server on PostgreSQL (reads on separate connections).
import { onPostgres } from "../../postgres/pg.ts";
import { useDatabase } from "../hosted-server.ts";

await onPostgres(
  () => useDatabase("postgres"),
  () => import("../queue-reads.test.ts"),
);
