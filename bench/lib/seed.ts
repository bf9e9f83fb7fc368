// Deep queues for the bench, seeded fast behind one long-running job: on SQLite through the store
// (one file, no server yet), on PostgreSQL with set-based INSERTs into a bench schema (the store
// creates the tables and the blocker; the queue goes in 10,000 rows a statement).
import pg from "pg";
import { uuidv7 } from "../../src/domain/ids.ts";
import { openStore } from "../../src/store/index.ts";
import { blockingGraph, threeNodeGraph } from "./graphs.ts";
import { BENCH_DATABASE_URL, schemaUrl } from "./postgres.ts";

const WEEK = 7 * 24 * 3_600_000;
const PG_BATCH = 10_000;

/** What a seeded queue holds: the blocker (first in line: the one slot starts it at boot) and the probe in the middle. */
export interface SeededQueue {
  blockerId: string;
  /** The queued job at index `probeIndex` of `depth`: its queue_position once the blocker runs. */
  probeId: string;
  probeIndex: number;
}

/** Seeds `depth` queued jobs behind one long-running job, straight into the SQLite file of `dataDir`. */
export async function seedSqliteQueue(dataDir: string, depth: number): Promise<SeededQueue> {
  const store = await openStore({ dataDir, synchronous: "normal" });
  const now = Date.now();
  const probeIndex = Math.floor(depth / 2);
  let probeId = "";
  const blockerId = uuidv7(now);
  try {
    // First in seq order: the dispatcher starts it at boot and it holds the only slot.
    await store.createJob({ id: blockerId, owner: "", created_at: now, expires_at: now + WEEK, workflow: blockingGraph(3600), output_node_ids: ["3"] });
    for (let i = 0; i < depth; i++) {
      const id = uuidv7(now);
      if (i === probeIndex) probeId = id;
      await store.createJob({ id, owner: "", created_at: now, expires_at: now + WEEK, workflow: threeNodeGraph(`seed-${i}`), output_node_ids: ["3"] });
    }
  } finally {
    await store.close();
  }
  return { blockerId, probeId, probeIndex };
}

/**
 * Seeds `depth` queued jobs behind one long-running job into the flowgate tables of `schema`
 * (created, with the blocker, by the store), as a server's submissions would leave them, then
 * ANALYZEs jobs as autovacuum would soon after: a server started on it sees a settled table.
 */
export async function seedPostgresQueue(schema: string, depth: number): Promise<SeededQueue> {
  const now = Date.now();
  const blockerId = uuidv7(now);
  const store = await openStore({ kind: "postgres", url: BENCH_DATABASE_URL, schema, maxConnections: 1 });
  try {
    await store.createJob({ id: blockerId, owner: "", created_at: now, expires_at: now + WEEK, workflow: blockingGraph(3600), output_node_ids: ["3"] });
  } finally {
    await store.close();
  }
  const probeIndex = Math.floor(depth / 2);
  let probeId = "";
  const workflow = JSON.stringify(threeNodeGraph("seed"));
  const client = new pg.Client({ connectionString: schemaUrl(schema) });
  await client.connect();
  try {
    for (let from = 0; from < depth; from += PG_BATCH) {
      const ids: string[] = [];
      for (let i = from; i < Math.min(depth, from + PG_BATCH); i++) {
        const id = uuidv7(now);
        if (i === probeIndex) probeId = id;
        ids.push(id);
      }
      // Rows go in in array order, so seq (an identity) follows it: the probe is the job at probeIndex.
      await client.query(
        `INSERT INTO jobs (id, owner, status, created_at, expires_at, output_node_ids, workflow)
         SELECT t.id, '', 'queued', $2, $3, '["3"]'::json, $4::json FROM unnest($1::text[]) WITH ORDINALITY AS t(id, ord) ORDER BY t.ord`,
        [ids, now, now + WEEK, workflow],
      );
    }
    await client.query("ANALYZE jobs");
  } finally {
    await client.end();
  }
  return { blockerId, probeId, probeIndex };
}
