// Inline blobs on PostgreSQL (small outputs' bytes kept by their records' statements, issue #48):
// ends batched in one statement that carry the same bytes, and a removal racing a record's write
// over the same bytes. Real PostgreSQL, real concurrent transactions.
import pg from "pg";
import { describe, expect, it } from "vitest";
import type { RunFence } from "../../../src/store/index.ts";
import { PG_SQL } from "../../../src/store/postgres-queries.ts";
import { adminQuery, postgresUnavailable, TEST_DATABASE_URL } from "../../postgres/pg.ts";
import { blobKey, newAsset, newJob, T0 } from "../helpers.ts";
import { leasedStore } from "./leased-store.ts";

const unavailable = await postgresUnavailable();
const t = leasedStore(unavailable);

const BYTES = new Uint8Array(Buffer.from("one pixel"));
const inline = (jobId: string, created_at = T0 + 5) =>
  newAsset({ job_id: jobId, blob_key: blobKey("e"), size_bytes: BYTES.byteLength, inline: BYTES, created_at });

describe.skipIf(unavailable !== null)("inline blobs (PostgreSQL)", () => {
  it("ends written in one statement that carry the same bytes keep one row, touched by the newest record", async () => {
    const [one, two] = (await t.runningJobs(2)) as [{ id: string; fence: RunFence }, { id: string; fence: RunFence }];
    const end = (job: { id: string; fence: RunFence }, at: number) =>
      t.store.transitionJobWithAssets(job.id, ["running"], "succeeded", { completed_at: T0 + 9 }, [inline(job.id, at)], [], job.fence);
    // Asked for in one turn: one statement (ON CONFLICT could not touch one row twice in it).
    const ended = await Promise.all([end(one, T0 + 7), end(two, T0 + 6)]);
    expect(ended.map((e) => e?.job.status)).toEqual(["succeeded", "succeeded"]);
    const writers = await adminQuery(`SELECT DISTINCT xmin::text AS x FROM ${t.schema}.jobs WHERE id = ANY($1)`, [[one.id, two.id]]);
    expect(writers).toHaveLength(1);
    expect(await adminQuery(`SELECT touched_at::int8 AS t, xmin::text AS x FROM ${t.schema}.inline_blobs`)).toEqual([{ t: String(T0 + 7), x: writers[0]!.x }]);
  });

  it("a removal waits for a record's write under way over the same bytes, then keeps them", async () => {
    const [first] = (await t.runningJobs(1)) as [{ id: string; fence: RunFence }];
    const gone = await t.store.addAsset(inline(first.id), first.fence);
    await t.store.deleteAsset(gone.id); // the bytes are unreferenced now
    const second = await t.store.createJob(newJob());
    // Another process writes a record over the same bytes and has not committed yet.
    const writer = new pg.Client({ connectionString: TEST_DATABASE_URL, application_name: "inline-writer" });
    await writer.connect();
    try {
      await writer.query(`SET search_path = ${t.schema}`);
      await writer.query("BEGIN");
      const record = inline(second.id, T0 + 6);
      await writer.query(PG_SQL.insertAsset, [
        record.id,
        record.owner,
        second.id,
        null,
        record.name,
        null,
        record.content_type,
        record.size_bytes,
        null,
        record.blob_key,
        record.folder,
        null,
        "[]",
        record.created_at,
        null,
        Buffer.from(BYTES),
      ]);
      // A removal that does not know of it (a time after every touch): it must wait for the writer's commit.
      const removal = t.store.dropInlineBlob(blobKey("e"), T0 + 1_000);
      // Until the removal waits on the lock, or settles without waiting (the defect this test is for).
      let settled = false;
      void removal.finally(() => (settled = true)).catch(() => undefined);
      let waiting = false;
      while (!waiting && !settled) {
        const rows = await adminQuery("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%inline_blobs%'");
        waiting = rows.length > 0;
        if (!waiting) await new Promise((r) => setImmediate(r));
      }
      expect(waiting).toBe(true);
      await writer.query("COMMIT");
      expect(await removal).toBe(false);
    } finally {
      await writer.end();
    }
    expect(Buffer.from((await t.store.inlineBlob(blobKey("e")))!.bytes).toString()).toBe("one pixel");
    expect(await t.store.listJobOutputs(second.id)).toHaveLength(1);
  });
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);
