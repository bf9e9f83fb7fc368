// A PostgreSQL store and its lease port on a fresh schema per test, and jobs claimed under leases:
// the setup of the tests of runs' ends and their outputs.
import { afterEach, beforeEach, expect } from "vitest";
import { openStore, type RunFence, type Store } from "../../../src/store/index.ts";
import { PostgresLeases } from "../../../src/store/postgres-leases.ts";
import { createTestSchema, dropTestSchema, TEST_DATABASE_URL } from "../../postgres/pg.ts";
import { newJob, T0 } from "../helpers.ts";

export interface LeasedStore {
  readonly schema: string;
  readonly store: Store;
  readonly leases: PostgresLeases;
  /** `n` jobs claimed (running) by worker "wa", with their fences. */
  runningJobs(n: number): Promise<Array<{ id: string; fence: RunFence }>>;
}

/** Opens a store and its leases before each test (unless `unavailable`) and drops their schema after. */
export function leasedStore(unavailable: string | null): LeasedStore {
  let schema = "";
  let store: Store;
  let leases: PostgresLeases;
  beforeEach(async () => {
    if (unavailable !== null) return;
    schema = await createTestSchema();
    store = await openStore({ kind: "postgres", url: TEST_DATABASE_URL, schema });
    leases = await PostgresLeases.open({ url: TEST_DATABASE_URL, schema });
  });
  afterEach(async () => {
    if (unavailable !== null) return;
    await Promise.all([store.close(), leases.close()]);
    await dropTestSchema(schema);
  });
  return {
    get schema() {
      return schema;
    },
    get store() {
      return store;
    },
    get leases() {
      return leases;
    },
    async runningJobs(n) {
      const jobs = [];
      for (let i = 0; i < n; i++) {
        const job = await store.createJob(newJob());
        const claimed = (await leases.claim("wa", 30_000, T0, undefined, []))!;
        expect(claimed.job.id).toBe(job.id);
        jobs.push({ id: job.id, fence: { workerId: "wa", epoch: claimed.epoch } });
      }
      return jobs;
    },
  };
}
