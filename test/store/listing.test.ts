import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InvalidCursorError } from "../../src/store/index.ts";
import type { JobRecord, ListJobsOptions } from "../../src/store/index.ts";
import { pgListLabeledJobsSql } from "../../src/store/postgres-queries.ts";
import { T0, newJob, openTestStore, storeKind } from "./helpers.ts";
import type { TestStore } from "./helpers.ts";

let t: TestStore;
beforeEach(async () => {
  t = await openTestStore();
});
afterEach(async () => {
  await t.cleanup();
});

async function createMany(count: number, owner = "alice"): Promise<JobRecord[]> {
  const jobs: JobRecord[] = [];
  for (let i = 0; i < count; i++) jobs.push(await t.store.createJob(newJob({ owner })));
  return jobs;
}

/** Follows next_cursor to the end, returning the pages' ids. */
async function allPages(owner: string, options: ListJobsOptions): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const page = await t.store.listJobs(owner, { ...options, cursor });
    pages.push(page.jobs.map((j) => j.id));
    cursor = page.next_cursor;
    expect(pages.length).toBeLessThan(100);
  } while (cursor !== null);
  return pages;
}

describe("listJobs", () => {
  it("pages an owner's jobs newest first, each exactly once", async () => {
    const jobs = await createMany(10);
    await createMany(3, "bob");
    const pages = await allPages("alice", { limit: 3 });
    expect(pages.map((p) => p.length)).toEqual([3, 3, 3, 1]);
    expect(pages.flat()).toEqual(jobs.map((j) => j.id).reverse());
  });

  it("ends without an empty page when the count is a multiple of the limit", async () => {
    const jobs = await createMany(6);
    const pages = await allPages("alice", { limit: 3 });
    expect(pages).toEqual([
      jobs
        .slice(3)
        .map((j) => j.id)
        .reverse(),
      jobs
        .slice(0, 3)
        .map((j) => j.id)
        .reverse(),
    ]);
    expect(await t.store.listJobs("nobody", { limit: 5 })).toEqual({ jobs: [], next_cursor: null });
  });

  it("keeps pages stable while newer jobs arrive", async () => {
    const jobs = await createMany(4);
    const first = await t.store.listJobs("alice", { limit: 2 });
    await createMany(2);
    const second = await t.store.listJobs("alice", { limit: 2, cursor: first.next_cursor });
    expect(second.jobs.map((j) => j.id)).toEqual([jobs[1]!.id, jobs[0]!.id]);
    expect(second.next_cursor).toBeNull();
  });

  it("filters by one status, several statuses, and deployment", async () => {
    const [a, b, c, d] = await createMany(4);
    await t.store.transitionJob(b!.id, ["queued"], "running", { started_at: T0 });
    await t.store.transitionJob(c!.id, ["queued"], "canceled", { completed_at: T0 });
    const e = await t.store.createJob(newJob({ deployment_id: "dep-1" }));
    const ids = async (options: Omit<ListJobsOptions, "limit">) => (await t.store.listJobs("alice", { limit: 100, ...options })).jobs.map((j) => j.id);
    expect(await ids({ status: "queued" })).toEqual([e.id, d!.id, a!.id]);
    expect(await ids({ status: ["running", "canceled"] })).toEqual([c!.id, b!.id]);
    expect(await ids({ status: ["running", "running"] })).toEqual([b!.id]);
    expect(await ids({ status: [] })).toEqual([]);
    expect(await ids({ deployment_id: "dep-1" })).toEqual([e.id]);
    expect(await ids({ deployment_id: "dep-1", status: "running" })).toEqual([]);
    const filteredPages = await allPages("alice", { limit: 1, status: "queued" });
    expect(filteredPages.flat()).toEqual([e.id, d!.id, a!.id]);
  });

  it("stores labels with the job and returns them on every record ({} when none)", async () => {
    const labeled = await t.store.createJob(newJob({ metadata: { project: "cats", "run.id": "42" } }));
    const plain = await t.store.createJob(newJob());
    expect(labeled.metadata).toEqual({ project: "cats", "run.id": "42" });
    expect(plain.metadata).toEqual({});
    expect((await t.store.getJob(labeled.id))!.metadata).toEqual({ project: "cats", "run.id": "42" });
    expect((await t.store.getJob(plain.id))!.metadata).toEqual({});
    const moved = await t.store.transitionJob(labeled.id, ["queued"], "running", { started_at: T0 });
    expect(moved!.metadata).toEqual({ project: "cats", "run.id": "42" });
    expect((await t.store.listJobs("alice", { limit: 10 })).jobs.map((j) => j.metadata)).toEqual([{}, { project: "cats", "run.id": "42" }]);
  });

  it("filters by labels, all of them, with status, deployment and cursor paging, newest first", async () => {
    const cats = { project: "cats" };
    const a = await t.store.createJob(newJob({ metadata: { ...cats, run: "1" } }));
    const b = await t.store.createJob(newJob({ metadata: { ...cats, run: "2" } }));
    await t.store.createJob(newJob({ metadata: { project: "dogs", run: "1" } }));
    const c = await t.store.createJob(newJob({ metadata: { ...cats, run: "1" }, deployment_id: "dep-1" }));
    await t.store.createJob(newJob({ owner: "bob", metadata: { ...cats, run: "1" } }));
    await t.store.createJob(newJob()); // no labels
    await t.store.transitionJob(b.id, ["queued"], "running", { started_at: T0 });
    const ids = async (options: Omit<ListJobsOptions, "limit">) => (await t.store.listJobs("alice", { limit: 100, ...options })).jobs.map((j) => j.id);
    expect(await ids({ metadata: cats })).toEqual([c.id, b.id, a.id]);
    expect(await ids({ metadata: { ...cats, run: "1" } })).toEqual([c.id, a.id]);
    expect(await ids({ metadata: { run: "1", project: "cats", nope: "x" } })).toEqual([]);
    expect(await ids({ metadata: { project: "cat" } })).toEqual([]);
    expect(await ids({ metadata: cats, status: "running" })).toEqual([b.id]);
    expect(await ids({ metadata: cats, status: ["queued", "canceled"] })).toEqual([c.id, a.id]);
    expect(await ids({ metadata: cats, deployment_id: "dep-1" })).toEqual([c.id]);
    expect(await ids({ metadata: {} })).toHaveLength(5); // no filter at all
    expect((await allPages("alice", { limit: 1, metadata: cats })).flat()).toEqual([c.id, b.id, a.id]);
    expect((await allPages("alice", { limit: 2, metadata: { ...cats, run: "1" } })).flat()).toEqual([c.id, a.id]);
    expect((await t.store.listJobs("bob", { limit: 10, metadata: cats })).jobs).toHaveLength(1);
    await expect(t.store.listJobs("alice", { limit: 1, metadata: { a: "1", b: "2", c: "3", d: "4" } })).rejects.toBeInstanceOf(RangeError);
  });

  it("drops a job's labels with the job when retention purges it", async () => {
    const gone = await t.store.createJob(newJob({ metadata: { project: "cats" }, expires_at: T0 + 1000 }));
    await t.store.transitionJob(gone.id, ["queued"], "canceled", { completed_at: T0 });
    const kept = await t.store.createJob(newJob({ metadata: { project: "cats" } }));
    await t.store.purgeExpired(T0 + 2000);
    expect(await t.store.getJob(gone.id)).toBeNull();
    expect((await t.store.listJobs("alice", { limit: 10, metadata: { project: "cats" } })).jobs.map((j) => j.id)).toEqual([kept.id]);
    const rows = await t.sql("SELECT seq FROM job_labels");
    expect(rows.map((r) => Number(r.seq))).toEqual([kept.seq]);
  });

  it("takes an owner's finished jobs out of history, named or all, and never live or others' jobs", async () => {
    const [a, b, live] = await createMany(3);
    const bobs = await t.store.createJob(newJob({ owner: "bob" }));
    for (const j of [a!, b!, bobs]) await t.store.transitionJob(j.id, ["queued"], "canceled", { completed_at: T0 });
    const inHistory = async (owner = "alice") => (await t.store.listJobs(owner, { limit: 10, in_history: true })).jobs.map((j) => j.id);
    expect(await inHistory()).toEqual([live!.id, b!.id, a!.id]);
    expect(await t.store.hideFromHistory("alice", [a!.id, live!.id, bobs.id, "nope", a!.id])).toBe(1);
    expect(await inHistory()).toEqual([live!.id, b!.id]);
    expect(await t.store.hiddenFromHistory(a!.id)).toBe(true);
    expect(await t.store.hiddenFromHistory(b!.id)).toBe(false);
    expect(await t.store.hiddenFromHistory("nope")).toBe(false);
    expect(await t.store.hideFromHistory("alice", null)).toBe(1);
    expect(await inHistory()).toEqual([live!.id]);
    expect(await inHistory("bob")).toEqual([bobs.id]);
    // Out of history only: the jobs are still there.
    expect((await t.store.listJobs("alice", { limit: 10 })).jobs).toHaveLength(3);
    await t.store.transitionJob(live!.id, ["queued"], "canceled", { completed_at: T0 });
    expect(await inHistory()).toEqual([live!.id]);
  });

  it.runIf(storeKind() === "postgres")(
    "reads a filtered page on PostgreSQL through job_labels' primary key: backwards with no sort when the label is common",
    async () => {
      await t.sql(`INSERT INTO jobs (id, owner, status, created_at, expires_at, output_node_ids, workflow, metadata)
      SELECT 'j' || g, 'o' || (g % 10), 'queued', 1, 2, '[]', '{}', json_build_object('all', 'yes', 'k', 'v' || (g % 50)) FROM generate_series(1, 20000) g`);
      await t.sql("INSERT INTO job_labels (owner, key, value, seq) SELECT owner, l.key, l.value, seq FROM jobs, json_each_text(metadata) l");
      await t.sql("ANALYZE jobs");
      await t.sql("ANALYZE job_labels");
      const plan = async (count: 1 | 2, keys: string[], values: string[]) =>
        (await t.sql(`EXPLAIN ${pgListLabeledJobsSql(count, false, false)}`, "o1", 1e15, 21, keys, values)).map((r) => String(r["QUERY PLAN"])).join("\n");
      // A label most jobs carry: the page is the first rows of the key range, read newest first.
      const common = await plan(1, ["all"], ["yes"]);
      expect(common).toMatch(/Index (Only )?Scan Backward using job_labels_pkey on job_labels l1/);
      expect(common).not.toMatch(/\bSort\b|Seq Scan/);
      // A rare one, alone or beside a common one: the planner drives from the rare key range (a
      // page's worth of rows sorted is as cheap), probing the others by primary key.
      for (const p of [await plan(1, ["k"], ["v1"]), await plan(2, ["all", "k"], ["yes", "v1"])]) {
        expect(p).toMatch(/Bitmap Index Scan on job_labels_pkey|Index (Only )?Scan (Backward )?using job_labels_pkey/);
        expect(p).not.toMatch(/Seq Scan/);
      }
    },
  );

  it("rejects cursors it did not issue", async () => {
    await createMany(3);
    const { next_cursor } = await t.store.listJobs("alice", { limit: 1 });
    expect(next_cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    const forged = Buffer.from("s1:0").toString("base64url");
    for (const cursor of [
      "",
      "!!!",
      "abc",
      forged,
      Buffer.from("s1:01").toString("base64url"),
      `${next_cursor}A`,
      Buffer.from("s1:1.5").toString("base64url"),
    ]) {
      await expect(t.store.listJobs("alice", { limit: 1, cursor }), cursor).rejects.toBeInstanceOf(InvalidCursorError);
    }
  });

  it("rejects a limit out of range", async () => {
    for (const limit of [0, -1, 1.5, 1001, Number.NaN]) {
      await expect(t.store.listJobs("alice", { limit })).rejects.toBeInstanceOf(RangeError);
    }
  });
});

describe("queue reads", () => {
  it("returns queued jobs FIFO, paged by seq, and counts them", async () => {
    const jobs = await createMany(5);
    await createMany(2, "bob");
    await t.store.transitionJob(jobs[1]!.id, ["queued"], "running", { started_at: T0 });
    const queued = await t.store.queuedJobs();
    expect(queued.map((j) => j.id)).toEqual([jobs[0], jobs[2], jobs[3], jobs[4]].map((j) => j!.id).concat(queued.slice(4).map((j) => j.id)));
    expect(queued).toHaveLength(6);
    expect(queued.every((j, i) => i === 0 || j.seq > queued[i - 1]!.seq)).toBe(true);
    const page1 = await t.store.queuedJobs(2);
    const page2 = await t.store.queuedJobs(2, page1[1]!.seq);
    expect([...page1, ...page2].map((j) => j.id)).toEqual(queued.slice(0, 4).map((j) => j.id));
    expect(await t.store.countQueued()).toBe(6);
    await expect(t.store.queuedJobs(0)).rejects.toBeInstanceOf(RangeError);

    // One owner's queue, FIFO and paged the same way.
    const bobs = await t.store.queuedJobs(1000, 0, "bob");
    expect(bobs.map((j) => j.owner)).toEqual(["bob", "bob"]);
    expect(bobs.map((j) => j.id)).toEqual(queued.slice(4).map((j) => j.id));
    expect(await t.store.queuedJobs(1, bobs[0]!.seq, "bob")).toEqual([bobs[1]]);
  });

  it("counts one owner's live jobs: queued, running and canceling, not ended", async () => {
    const jobs = await createMany(4);
    await createMany(2, "bob");
    await t.store.transitionJob(jobs[0]!.id, ["queued"], "running", { started_at: T0 });
    await t.store.transitionJob(jobs[1]!.id, ["queued"], "running", { started_at: T0 });
    await t.store.transitionJob(jobs[1]!.id, ["running"], "canceling", {});
    await t.store.transitionJob(jobs[2]!.id, ["queued"], "canceled", { completed_at: T0 });
    expect(await t.store.countLive("alice")).toBe(3);
    expect(await t.store.countLive("bob")).toBe(2);
    expect(await t.store.countLive("nobody")).toBe(0);
    await t.store.transitionJob(jobs[0]!.id, ["running"], "succeeded", { completed_at: T0 + 1 });
    expect(await t.store.countLive("alice")).toBe(2);
  });

  it("finds jobs in given statuses for startup recovery", async () => {
    const jobs = await createMany(4);
    await t.store.transitionJob(jobs[0]!.id, ["queued"], "running", { started_at: T0 });
    await t.store.transitionJob(jobs[2]!.id, ["queued"], "running", { started_at: T0 });
    await t.store.transitionJob(jobs[2]!.id, ["running"], "canceling");
    const recovering = await t.store.jobsInStatus(["running", "canceling"]);
    expect(recovering.map((j) => [j.id, j.status])).toEqual([
      [jobs[0]!.id, "running"],
      [jobs[2]!.id, "canceling"],
    ]);
    expect(await t.store.jobsInStatus([])).toEqual([]);
    expect((await t.store.jobsInStatus(["queued"])).map((j) => j.id)).toEqual([jobs[1]!.id, jobs[3]!.id]);
  });
});
