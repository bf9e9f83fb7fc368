// The conformance suite against a server on PostgreSQL (--database-url, blobs in --blob-dir),
// on each of the three surfaces: the same proof as ../reference-server.test.ts.
import { useDatabase } from "../../hosted/hosted-server.ts";
import { onPostgres } from "../../postgres/pg.ts";

await onPostgres(
  () => useDatabase("postgres"),
  () => import("../reference-server.test.ts"),
);
