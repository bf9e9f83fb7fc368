// PRG: progress snapshots: complete, within 0..1, weighted by step, and the same on GET and on
// the stream. Comparisons are made while the job's progress is steady (a slow node waiting), so
// that they never depend on timing.
import { check, type T } from "../../check.ts";
import { TERMINAL } from "../../machinery/contract.ts";
import { endOf, openEvents, readJobOk, slowGraph, stepsGraph, submitOk, type Job, type JobRef } from "../support/jobs.ts";
import { deepEqual } from "../support/support.ts";

type Progress = NonNullable<Job["progress"]>;

/** Polls a job to its end, collecting every progress snapshot GET showed. */
async function collect(t: T, ref: JobRef, intervalMs = 30): Promise<{ end: JobRef; snapshots: Progress[] }> {
  const snapshots: Progress[] = [];
  const end = await t.until(
    "the job ending",
    async () => {
      const r = await readJobOk(t, ref);
      if (r.job.progress) snapshots.push(r.job.progress);
      return TERMINAL.has(r.job.status) ? r : undefined;
    },
    t.options.jobTimeoutMs,
    intervalMs,
  );
  return { end, snapshots };
}

/**
 * A running slow job whose progress is set and steady (its slow node is waiting): two reads 100 ms
 * apart show the same snapshot. The first snapshot seen may be one the nodes before the slow one
 * are about to replace.
 */
async function steadyJob(t: T): Promise<JobRef> {
  const ref = await submitOk(t, slowGraph(t));
  let last: Progress | null = null;
  const seen: string[] = [];
  const r = await t.until("a steady progress snapshot while running", async () => {
    const read = await readJobOk(t, ref);
    const now = `${read.job.status}${read.job.progress ? ` ${read.job.progress.nodes_done}/${read.job.progress.nodes_total} nodes, value ${read.job.progress.value}` : ", no progress"}`;
    if (seen[seen.length - 1] !== now) seen.push(now);
    if (TERMINAL.has(read.job.status)) return read;
    const steady = read.job.status !== "queued" && read.job.progress != null && last !== null && deepEqual(read.job.progress, last);
    last = read.job.progress ?? null;
    return steady ? read : undefined;
  });
  t.need(
    !TERMINAL.has(r.job.status),
    `the job ended before two reads showed the same progress while running; GET showed: ${seen.slice(-6).join("; ")} (a longer --slow-seconds or --slow-workflow gives more time)`,
  );
  return r;
}

export default [
  check("PRG-1 progress snapshots have value within 0..1 and integer node counts", async (t: T) => {
    const { end, snapshots } = await collect(t, await submitOk(t, stepsGraph(t)));
    t.need(
      snapshots.length > 0,
      `GET showed no progress snapshot before the job ${endOf(end.job)} (polled every 30 ms; a --steps-workflow with more steps gives more time)`,
    );
    for (const p of snapshots) {
      t.expect(typeof p.value === "number" && p.value >= 0 && p.value <= 1, `value ${p.value} is outside 0..1`);
      t.expect(
        Number.isInteger(p.nodes_done) && Number.isInteger(p.nodes_total) && p.nodes_done <= p.nodes_total,
        `nodes_done ${p.nodes_done} / nodes_total ${p.nodes_total}`,
      );
      if (p.step != null || p.steps != null) t.expect(Number.isInteger(p.step) && Number.isInteger(p.steps), `step ${p.step} / steps ${p.steps}`);
    }
  }),

  check("PRG-2 progress is server-computed and advances with the steps of a stepped node", async (t: T) => {
    const ref = await submitOk(t, stepsGraph(t));
    const { stream } = await openEvents(t, ref);
    const { end, snapshots } = await collect(t, ref, 15);
    const all = [...snapshots, ...(stream?.events.filter((e) => e.event === "progress").map((e) => e.json as Progress) ?? [])];
    t.need(end.job.status === "succeeded", `the stepped job ${endOf(end.job)}, not succeeded`);
    const stepped = all.filter((p) => p && p.step != null && p.steps != null && p.current_node != null);
    const byNode = new Map<string, Progress[]>();
    for (const p of stepped) byNode.set(p.current_node!, [...(byNode.get(p.current_node!) ?? []), p]);
    const node = [...byNode.values()].find((ps) => new Set(ps.map((p) => p.step)).size >= 2);
    t.need(
      node,
      `the stepped node finished before two of its steps could be seen: GET and the stream showed steps ${JSON.stringify([...new Set(stepped.map((p) => `${p.current_node}:${p.step}/${p.steps}`))].slice(0, 10))} (use a --steps-workflow with more steps)`,
    );
    node.sort((a, b) => a.step! - b.step!);
    const lo = node[0]!;
    const hi = node[node.length - 1]!;
    t.expect(hi.value > lo.value, `value did not advance from step ${lo.step} (${lo.value}) to step ${hi.step} (${hi.value})`);
    for (let i = 1; i < node.length; i++)
      t.expect(node[i]!.value >= node[i - 1]!.value, `value went back from ${node[i - 1]!.value} to ${node[i]!.value} as steps advanced`);
  }),

  check("PRG-3 a snapshot alone resynchronizes: a stream opened mid-run starts from the current progress", async (t: T) => {
    const ref = await steadyJob(t);
    const before = await readJobOk(t, ref);
    const { stream, ex } = await openEvents(t, ref);
    if (!stream) t.fail(`the event stream answered ${ex?.status}`, ex);
    const status = await stream.waitFor((e) => e.event === "status", t.options.requestTimeoutMs);
    const after = await readJobOk(t, ref);
    t.need(status, "no status event on connect (reported under SSE-2)");
    const p = (status.json as Job).progress;
    t.need(
      !TERMINAL.has(after.job.status),
      `GET showed the job ${after.job.status} once the stream's first status event came: it ended while the stream opened (a longer --slow-seconds or --slow-workflow gives more time)`,
    );
    t.expect(p != null, "the status event on connect carries no progress while GET has one");
    t.expect(
      deepEqual(p, before.job.progress) || deepEqual(p, after.job.progress),
      `the status event's progress ${JSON.stringify(p)} is not the job's ${JSON.stringify(after.job.progress)}`,
    );
  }),

  check("PRG-4 progress events carry the same snapshot as job.progress", async (t: T) => {
    const ref = await steadyJob(t);
    const before = await readJobOk(t, ref);
    const { stream, ex } = await openEvents(t, ref);
    if (!stream) t.fail(`the event stream answered ${ex?.status}`, ex);
    await stream.waitFor((e) => e.event === "progress", Math.min(2000, t.options.requestTimeoutMs));
    const after = await readJobOk(t, ref);
    const events = stream.events.filter((e) => e.event === "progress");
    t.need(
      events.length > 0,
      `no progress event arrived while GET showed the job's progress steady at ${JSON.stringify(before.job.progress)}; the stream sent ${JSON.stringify(stream.events.map((e) => e.event))}`,
    );
    // Had the job moved on, the events between the two reads could carry snapshots neither read saw.
    t.need(
      after.job.status === "running" && deepEqual(after.job.progress, before.job.progress),
      `the job moved on while its stream was read: GET showed ${after.job.status} with progress ${JSON.stringify(after.job.progress)} after ${JSON.stringify(before.job.progress)} (a longer --slow-seconds or --slow-workflow gives more time)`,
    );
    for (const e of events) {
      t.expect(
        deepEqual(e.json, before.job.progress),
        `progress event ${e.data} differs from job.progress ${JSON.stringify(before.job.progress)}, which GET showed before and after it`,
      );
    }
  }),
];
