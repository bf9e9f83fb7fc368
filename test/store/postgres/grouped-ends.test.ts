// The ends of a worker's concurrent runs (issue #48): ends written while another commits share the
// next transaction (one BEGIN, COMMIT and WAL flush for several jobs), each still fenced by its own
// lease. Real PostgreSQL; which transaction wrote a row is read from its xmin.
import { describe, expect, it } from "vitest";
import type { RunFence } from "../../../src/store/index.ts";
import { adminQuery, postgresUnavailable } from "../../postgres/pg.ts";
import { blobKey, newAsset, T0 } from "../helpers.ts";
import { leasedStore } from "./leased-store.ts";

const unavailable = await postgresUnavailable();
const t = leasedStore(unavailable);

/** The transaction that last wrote each of the jobs' rows and their outputs' rows. */
async function writers(ids: readonly string[]): Promise<{ jobs: string[]; assets: string[] }> {
  const jobs = await adminQuery(`SELECT xmin::text AS x FROM ${t.schema}.jobs WHERE id = ANY($1) ORDER BY id`, [ids]);
  const assets = await adminQuery(`SELECT xmin::text AS x FROM ${t.schema}.assets WHERE job_id = ANY($1) ORDER BY job_id`, [ids]);
  return { jobs: jobs.map((r) => r.x as string), assets: assets.map((r) => r.x as string) };
}

const end = (id: string, fence: RunFence, asset = newAsset({ job_id: id, blob_key: blobKey("c") })) =>
  t.store.transitionJobWithAssets(id, ["running"], "succeeded", { completed_at: T0 + 1 }, [asset], [], fence);

describe.skipIf(unavailable !== null)("ends of concurrent runs (PostgreSQL)", () => {
  it("commit in one transaction; a refused fence among them writes nothing of its end and fails none of the others", async () => {
    const [one, two, three] = await t.runningJobs(3);
    // Asked for in one turn, as a worker's runs ending together do.
    const [a, refused, c] = await Promise.all([
      end(one!.id, one!.fence),
      end(two!.id, { workerId: "wa", epoch: two!.fence.epoch + 1 }),
      end(three!.id, three!.fence),
    ]);
    expect(a?.job.status).toBe("succeeded");
    expect(c?.job.status).toBe("succeeded");
    expect(refused).toBeNull();
    expect((await t.store.getJob(two!.id))?.status).toBe("running");
    expect(await t.store.listJobOutputs(two!.id)).toEqual([]);
    const written = await writers([one!.id, three!.id]);
    expect(new Set([...written.jobs, ...written.assets]).size).toBe(1);
    expect(written.assets).toHaveLength(2);
  });

  it("an end that fails rolls its batch back, and the others then commit each in its own transaction", async () => {
    const [one, two, three] = await t.runningJobs(3);
    // The second end's record reuses an existing asset's id: its insert fails.
    const taken = newAsset({ job_id: two!.id, blob_key: blobKey("d") });
    await t.store.addAsset(taken, two!.fence);
    const [a, failed, c] = await Promise.allSettled([end(one!.id, one!.fence), end(two!.id, two!.fence, { ...taken }), end(three!.id, three!.fence)]);
    expect(a.status === "fulfilled" && a.value?.job.status).toBe("succeeded");
    expect(c.status === "fulfilled" && c.value?.job.status).toBe("succeeded");
    expect(failed.status).toBe("rejected");
    // Its move was rolled back with its record: the run still holds the job.
    expect((await t.store.getJob(two!.id))?.status).toBe("running");
    const written = await writers([one!.id, three!.id]);
    expect(new Set(written.jobs).size).toBe(2);
  });

  it("an end asked for while another commits goes in the next transaction", async () => {
    const [one, two, three] = await t.runningJobs(3);
    const first = end(one!.id, one!.fence);
    // Once the first end's transaction is under way (a turn later), the next two arrive together.
    await new Promise((resolve) => setImmediate(resolve));
    const later = [end(two!.id, two!.fence), end(three!.id, three!.fence)];
    await Promise.all([first, ...later]);
    const [x1, x2, x3] = (await Promise.all([one!.id, two!.id, three!.id].map((id) => writers([id])))).map((w) => w.jobs[0]);
    expect(x2).toBe(x3);
    expect(x1).not.toBe(x2);
  });
});
