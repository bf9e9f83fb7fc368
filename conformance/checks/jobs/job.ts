// JOB: the job resource: required fields, date-times, incremental outputs, metrics, queue
// position, started_at and completed_at.
import { check, type T } from "../../check.ts";
import { TERMINAL } from "../../machinery/contract.ts";
import { cancelJob, endOf, pollJob, queuedJob, readJobOk, slowGraph, started, submit, submitOk, waitTerminal, type Job, type JobRef } from "../support/jobs.ts";
import { RFC3339 } from "../support/support.ts";
import { defaultSlowGraph, prefixIds, simpleGraph } from "../support/workflows.ts";

const REQUIRED = ["id", "status", "created_at", "started_at", "completed_at", "expires_at", "queue_position", "progress", "outputs", "error", "urls"];

/** How finely an RFC 3339 time is given, in ms: 1000 without fractional seconds. */
function precisionMs(time: string): number {
  const fraction = /\.(\d+)/.exec(time)?.[1];
  return fraction ? Math.max(1, 10 ** (3 - Math.min(3, fraction.length))) : 1000;
}

function missing(job: object): string[] {
  return REQUIRED.filter((k) => !Object.hasOwn(job, k));
}

export default [
  check("JOB-1 a job has every required field, nullable ones present as null", { static: true }, async (t: T) => {
    const created = await submitOk(t, simpleGraph());
    const m1 = missing(created.job);
    t.expect(m1.length === 0, `POST /api/v2/jobs omits ${m1.join(", ")}`, created.ex);
    const read = await readJobOk(t, created);
    const m2 = missing(read.job);
    t.expect(m2.length === 0, `GET omits ${m2.join(", ")}`, read.ex);
  }),

  check("JOB-2 date-times are RFC 3339", { static: true }, async (t: T) => {
    const created = await submitOk(t, simpleGraph());
    const end = t.options.static ? await readJobOk(t, created) : await waitTerminal(t, created);
    for (const { job, ex } of [created, end]) {
      for (const k of ["created_at", "started_at", "completed_at", "expires_at"] as const) {
        const v = job[k];
        if (v === null || v === undefined) continue;
        t.expect(RFC3339.test(v), `${k} ${JSON.stringify(v)} is not RFC 3339`, ex);
      }
      // A missing url_expires_at is OUT-1's; only a present one is checked here.
      for (const o of job.outputs ?? []) {
        if (o.url_expires_at !== undefined) t.expect(RFC3339.test(o.url_expires_at), `url_expires_at ${JSON.stringify(o.url_expires_at)} is not RFC 3339`, ex);
      }
    }
  }),

  check("JOB-4 outputs fill incrementally: an output committed mid-run is visible before the job ends", async (t: T) => {
    // Two slow branches: whichever runs first commits its output while the other still waits. The
    // second lasts many polls longer than the first (half the job timeout): a window of a fraction
    // of a second was missed by polls slowed by a loaded machine. The job is canceled once seen.
    const s = t.options.slowSeconds;
    const graph = t.options.slowWorkflow
      ? { ...prefixIds(slowGraph(t), "a"), ...prefixIds(slowGraph(t), "b") }
      : { ...prefixIds(defaultSlowGraph(s), "a"), ...prefixIds(defaultSlowGraph(Math.max(s * 4, t.options.jobTimeoutMs / 2000)), "b") };
    t.requireClasses(graph, "slow");
    const ref = await submitOk(t, graph);
    const seen = await pollJob(t, ref, "an output or the job's end", (j) => TERMINAL.has(j.status) || (j.outputs?.length ?? 0) > 0);
    if (!TERMINAL.has(seen.job.status)) return;
    t.need(seen.job.status === "succeeded", `the two-branch job ${endOf(seen.job)}, not succeeded`);
    t.need(seen.job.outputs.length >= 2, `the two-branch graph produced ${seen.job.outputs.length} output(s)`);
    t.fail("no output was visible on GET until the job ended");
  }),

  check("JOB-5 metrics, when present, has queue_ms and execution_ms, integers or null, execution_ms null before the run", async (t: T) => {
    const created = await submitOk(t, slowGraph(t));
    const end = await waitTerminal(t, created);
    const views: Array<[string, Job]> = [
      ["POST", created.job],
      ["GET", end.job],
    ];
    t.need(
      views.some(([, j]) => j.metrics !== undefined),
      "neither POST nor GET of the job carried metrics (optional in the contract): nothing to check",
    );
    for (const [where, j] of views) {
      if (j.metrics === undefined) continue;
      for (const k of ["queue_ms", "execution_ms"]) t.expect(Object.hasOwn(j.metrics, k), `${where}: metrics omits ${k}`);
      for (const [k, v] of Object.entries(j.metrics)) t.expect(v === null || Number.isInteger(v), `${where}: metrics.${k} is ${JSON.stringify(v)}`);
      if (j.status === "queued") t.expect(j.metrics.execution_ms === null, `${where}: execution_ms is ${j.metrics.execution_ms} before the job ran`);
    }
    // What they mean: the time between the job's own timestamps.
    const m = end.job.metrics;
    if (m === undefined || end.job.started_at == null) return;
    const tolerance = Math.max(precisionMs(end.job.created_at), precisionMs(end.job.started_at), 10);
    const queued = Date.parse(end.job.started_at) - Date.parse(end.job.created_at);
    if (typeof m.queue_ms === "number")
      t.expect(Math.abs(m.queue_ms - queued) <= tolerance, `queue_ms is ${m.queue_ms}, but started_at - created_at is ${queued} ms`, end.ex);
    if (end.job.completed_at == null) return;
    const ran = Date.parse(end.job.completed_at) - Date.parse(end.job.started_at);
    t.expect(
      typeof m.execution_ms === "number" && Math.abs(m.execution_ms - ran) <= Math.max(tolerance, precisionMs(end.job.completed_at)),
      `execution_ms is ${JSON.stringify(m.execution_ms)} on the finished job, but completed_at - started_at is ${ran} ms`,
      end.ex,
    );
  }),

  check(
    "JOB-6 queue_position counts the jobs ahead: a later queued job is further back, and moves up when one ahead leaves",
    { timeoutMs: 300_000 },
    async (t: T) => {
      const { target } = await queuedJob(t);
      // Three more behind it, so that the queue outlasts the reads below even on a busy surface.
      const jobs = [target];
      for (let i = 0; i < 3; i++) {
        const { ex, ref } = await submit(t, slowGraph(t));
        // A bounded queue may be full already (SUB-8): the jobs queued so far will do.
        if (ex.status === 429) break;
        if (!ref) t.fail(`the submission was not accepted (expected 201 with a job, got ${ex.status})`, ex);
        jobs.push(ref);
      }
      // The latest first: positions only fall over time, so a job read after one that was created
      // after it (each submission answered before the next was sent) must still be ahead of it.
      const reads: JobRef[] = [];
      for (const j of jobs.toReversed()) reads.push(await readJobOk(t, j));
      const queued = reads.filter((r) => r.job.status === "queued" && Number.isInteger(r.job.queue_position));
      t.need(queued.length >= 2, `fewer than two of four slow jobs were still queued when read (${reads.map((r) => r.job.status).join(", ")})`);
      for (let i = 1; i < queued.length; i++) {
        const [behind, ahead] = [queued[i - 1]!, queued[i]!];
        t.expect(
          ahead.job.queue_position! < behind.job.queue_position!,
          `job ${behind.job.id} (created later) has queue_position ${behind.job.queue_position}, job ${ahead.job.id} ahead of it ${ahead.job.queue_position}`,
          ahead.ex,
        );
      }
      const [last, first] = [queued[0]!, queued[queued.length - 1]!];
      const canceled = await cancelJob(t, first);
      t.need(canceled.ref?.job.status === "canceled", `canceling the queued job ahead answered ${canceled.ex.status} ${canceled.ref?.job.status ?? ""}`);
      const after = await readJobOk(t, last);
      if (after.job.status !== "queued" || !Number.isInteger(after.job.queue_position)) return;
      t.expect(
        after.job.queue_position! < last.job.queue_position!,
        `queue_position stayed ${after.job.queue_position} (was ${last.job.queue_position}) after a queued job ahead was canceled`,
        after.ex,
      );
    },
  ),

  check("JOB-7 started_at is set when the job leaves queued, completed_at when it ends", async (t: T) => {
    // A missing field is JOB-1's; only jobs that carry both are judged here.
    const both = (j: Job) => j.started_at !== undefined && j.completed_at !== undefined;
    const created = await submitOk(t, slowGraph(t));
    if (both(created.job)) t.expect(created.job.started_at === null && created.job.completed_at === null, "a queued job has started_at or completed_at set");
    const running = await pollJob(t, created, "the job starting", (j) => started(j));
    if (!TERMINAL.has(running.job.status) && both(running.job)) {
      t.expect(running.job.started_at !== null, `started_at is null while ${running.job.status}`);
      t.expect(running.job.completed_at === null, `completed_at is set while ${running.job.status}`);
    }
    const end = await waitTerminal(t, created);
    t.need(both(end.job), "a field is missing (reported under JOB-1)");
    t.expect(end.job.completed_at !== null, "completed_at is null after the job ended");
    t.expect(end.job.started_at !== null, "started_at is null after the job ran");
    if (end.job.started_at && end.job.completed_at)
      t.expect(Date.parse(end.job.completed_at) >= Date.parse(end.job.started_at), "completed_at is before started_at");
  }),
];
