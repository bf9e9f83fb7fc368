// JERR: execution failures are reported in job.error, never as HTTP errors.
import { check, type T } from "../../check.ts";
import { failingGraph, runOk, submitOk, waitTerminal } from "../support/jobs.ts";
import { simpleGraph } from "../support/workflows.ts";

export default [
  check("JERR-1 a failure while running is status failed with error {code, message}, not an HTTP error", async (t: T) => {
    // submitOk fails the check unless the submission itself succeeded (201).
    const end = await waitTerminal(t, await submitOk(t, failingGraph(t)));
    t.expect(end.job.status === "failed", `the failing graph ended ${end.job.status}`, end.ex);
    const e = end.job.error;
    t.expect(!!e && typeof e.code === "string" && typeof e.message === "string", `error is ${JSON.stringify(e)}`, end.ex);
  }),

  check("JERR-2 error is null unless the job failed", async (t: T) => {
    const created = await submitOk(t, simpleGraph());
    t.expect(created.job.error === null, `a queued job has error ${JSON.stringify(created.job.error)}`, created.ex);
    const end = await runOk(t, simpleGraph());
    t.expect(end.job.error === null, `a succeeded job has error ${JSON.stringify(end.job.error)}`, end.ex);
  }),
];
