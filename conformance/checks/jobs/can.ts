// CAN: cancellation: the current job without logs; running -> canceling -> canceled; a queued job
// ends canceled; a finished job is unchanged; a cancel racing completion ends one way only.
import { check, type T } from "../../check.ts";
import { TERMINAL } from "../../machinery/contract.ts";
import { cancelJob, openEvents, pollJob, queuedJob, readJobOk, runOk, slowGraph, started, submitOk, waitTerminal, type JobRef } from "../support/jobs.ts";
import { defaultSlowGraph, simpleGraph } from "../support/workflows.ts";

export default [
  check("CAN-1 cancel answers 200 with the current job, without logs", { static: true }, async (t: T) => {
    const ref = await submitOk(t, simpleGraph());
    const { ex, ref: after } = await cancelJob(t, ref);
    t.expect(ex.status === 200 && after?.job.id === ref.job.id, `cancel answered ${ex.status}${after ? ` for job ${after.job.id}` : ""}`, ex);
    if (after) t.expect(!Object.hasOwn(after.job, "logs"), "the cancel answer carries logs", ex);
  }),

  check("CAN-2 canceling a running job answers canceling, then the job becomes canceled", async (t: T) => {
    const ref = await submitOk(t, slowGraph(t));
    // A stream followed through the cancel: the timeline holds it to the transitions GET shows (SSE-2).
    await openEvents(t, ref).catch(() => undefined);
    const running = await pollJob(t, ref, "the job starting", (j) => started(j));
    t.need(
      !TERMINAL.has(running.job.status),
      `the first GET that showed the slow job past queued showed it ${running.job.status}: it ended before it could be canceled (a longer --slow-seconds or --slow-workflow gives more time)`,
    );
    const { ex, ref: after } = await cancelJob(t, running);
    if (!after) t.fail(`cancel answered ${ex.status}`, ex);
    t.expect(after.job.status === "canceling", `cancel of a running job answered ${after.job.status}, not canceling`, ex);
    const end = await waitTerminal(t, ref);
    t.expect(end.job.status === "canceled", `the canceled job ended ${end.job.status}`);
  }),

  check("CAN-2 a cancel racing completion ends in one terminal status that never changes", async (t: T) => {
    const graph = t.options.slowWorkflow ? slowGraph(t) : defaultSlowGraph(0.05);
    t.requireClasses(graph, "slow");
    for (let i = 0; i < 4; i++) {
      const ref = await submitOk(t, graph);
      const running = await pollJob(t, ref, "the job starting", (j) => started(j));
      // A read in flight at the same moment: the answers may cross, the end state may not waver.
      const [cancel] = await Promise.all([cancelJob(t, running), readJobOk(t, running)]);
      if (!cancel.ref) t.fail(`cancel answered ${cancel.ex.status}`, cancel.ex);
      const said = cancel.ref.job.status;
      const end = await waitTerminal(t, ref);
      if (said === "canceling") t.expect(end.job.status === "canceled", `cancel answered canceling but the job ended ${end.job.status}`);
      else if (TERMINAL.has(said)) t.expect(end.job.status === said, `cancel answered ${said} but the job ended ${end.job.status}`);
      else t.expect(false, `cancel of a started job answered ${said}`, cancel.ex);
      t.expect(end.job.status === "canceled" || end.job.status === "succeeded", `the job ended ${end.job.status}`);
    }
  }),

  check("CAN-3 canceling a queued job ends it canceled", { timeoutMs: 300_000 }, async (t: T) => {
    const { target } = await queuedJob(t);
    const { ex, ref: after } = await cancelJob(t, target);
    if (!after) t.fail(`cancel answered ${ex.status}`, ex);
    t.expect(after.job.status === "canceled" || after.job.status === "canceling", `cancel of a queued job answered ${after.job.status}`, ex);
    const end = await waitTerminal(t, target);
    t.expect(end.job.status === "canceled", `the canceled queued job ended ${end.job.status}`);
  }),

  check("CAN-3 canceling a finished job changes nothing (200, same status)", async (t: T) => {
    const end: JobRef = await runOk(t, simpleGraph());
    const { ex, ref: after } = await cancelJob(t, end);
    t.expect(
      ex.status === 200 && after?.job.status === end.job.status,
      `cancel of a ${end.job.status} job answered ${ex.status} ${after?.job.status ?? ""}`,
      ex,
    );
    const again = await readJobOk(t, end);
    t.expect(again.job.status === end.job.status, `the job now reads ${again.job.status}`);
  }),
];
