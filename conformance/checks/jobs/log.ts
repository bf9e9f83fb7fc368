// LOG: a job's captured standard output: only on serverless, only on GET, absent (never null)
// when there is none, withheld by the demo deployment.
import { check, type Applicability, type T } from "../../check.ts";
import {
  cancelJob,
  endOf,
  failingGraph,
  openEvents,
  pollJob,
  readJobOk,
  runOk,
  runToEnd,
  slowGraph,
  started,
  submitOk,
  waitTerminal,
  type Job,
} from "../support/jobs.ts";
import { RFC3339 } from "../support/support.ts";
import { nonce, printGraph, simpleGraph, type Graph } from "../support/workflows.ts";

const notDemo: Applicability = (r) => (r.options.demo ? "--demo was given: the demo deployment withholds logs (LOG-4 checks that)" : undefined);

/** The print graph with a unique first line; skips where FlowgatePrint is missing. */
function printing(t: T): { graph: Graph; first: string } {
  const first = `conformance-log-${nonce()}`;
  const graph = printGraph(first);
  t.requireClasses(graph, "print");
  return { graph, first };
}

export default [
  check("LOG-1 a finished job carries no logs on the self-hosted and cloud surfaces", { surfaces: ["self-hosted", "cloud"] }, async (t: T) => {
    const end = await runOk(t, simpleGraph());
    const read = await readJobOk(t, end);
    // A null logs is LOG-3's (absent, never null); here any logs at all is the defect.
    t.expect(read.job.logs == null, `GET carries logs on the ${t.options.surface} surface`, read.ex);
  }),

  check("LOG-1 a finished job carries logs on GET on a serverless surface", { surfaces: ["serverless"], when: notDemo }, async (t: T) => {
    const { graph } = printing(t);
    const end = await runOk(t, graph);
    t.expect(Object.hasOwn(end.job, "logs") && end.job.logs !== null, "GET of a finished job carries no logs", end.ex);
  }),

  check("LOG-2 the log is captured for succeeded and for failed jobs", { surfaces: ["serverless"], when: notDemo }, async (t: T) => {
    const { graph } = printing(t);
    const ok = await runOk(t, graph);
    t.expect(!!ok.job.logs, "a succeeded job has no logs");
    const failed = await runToEnd(t, failingGraph(t));
    t.need(failed.job.status === "failed", `the failing graph ${endOf(failed.job)}, not failed (--failing-workflow with a graph that fails makes this apply)`);
    t.expect(!!failed.job.logs, "a failed job has no logs");
  }),

  check("LOG-3 logs is absent, never null, while the job runs and where there is none", async (t: T) => {
    const ref = await submitOk(t, slowGraph(t));
    const running = await pollJob(t, ref, "the job starting", (j) => started(j));
    // POST, cancel, list and the status event are LOG-5's; these are GET's answers.
    const views: Array<[string, Job]> = [["GET while running", running.job]];
    if (!t.profile.logs || t.options.demo) views.push(["GET after the end", (await runOk(t, simpleGraph())).job]);
    for (const [where, job] of views) {
      t.expect(!Object.hasOwn(job, "logs"), `${where}: logs is ${JSON.stringify(job.logs)} (${job.status}), it must be absent`);
    }
  }),

  check(
    "LOG-4 the demo deployment takes anonymous callers, captures the log and withholds it",
    { when: (r) => (r.options.demo ? undefined : "not the demo deployment (pass --demo)") },
    async (t: T) => {
      const end = await runOk(t, simpleGraph(), { auth: "none" });
      const read = await readJobOk(t, end, "none");
      t.expect(!Object.hasOwn(read.job, "logs"), "the demo deployment returned logs");
    },
  ),

  check("LOG-5 logs never appear on POST, on cancel, in the list or in the status event", async (t: T) => {
    const { graph } = t.profile.logs && !t.options.demo ? printing(t) : { graph: simpleGraph() };
    const created = await submitOk(t, graph);
    t.expect(!Object.hasOwn(created.job, "logs"), "POST /api/v2/jobs carries logs", created.ex);
    const end = await waitTerminal(t, created);
    const canceled = await cancelJob(t, end);
    if (canceled.ref) t.expect(!Object.hasOwn(canceled.ref.job, "logs"), "cancel carries logs", canceled.ex);
    const list = await t.api.GET("/api/v2/jobs", { params: { query: { limit: 5 } } });
    const jobs = (t.ex(list.response)?.json as { jobs?: Job[] } | undefined)?.jobs ?? [];
    for (const j of jobs) t.expect(!Object.hasOwn(j, "logs"), `the list entry of ${j.id} carries logs`, t.ex(list.response));
    const { stream } = await openEvents(t, end);
    const status = await stream?.waitFor((e) => e.event === "status", t.options.requestTimeoutMs);
    if (status) t.expect(!Object.hasOwn(status.json as object, "logs"), "the SSE status event carries logs");
  }),

  check(
    "LOG-6 JobLogs has text, truncated and captured_at; text holds the output in write order",
    { surfaces: ["serverless"], when: notDemo },
    async (t: T) => {
      const { graph, first } = printing(t);
      const end = await runOk(t, graph);
      const logs = end.job.logs;
      t.need(logs, "GET of the finished job showed no logs (reported under LOG-1)");
      t.expect(
        typeof logs.text === "string" && typeof logs.truncated === "boolean" && RFC3339.test(String(logs.captured_at)),
        `logs is ${JSON.stringify(logs).slice(0, 200)}`,
      );
      if (!logs.truncated) {
        const a = logs.text.indexOf(first);
        const b = logs.text.indexOf(`${first} second`);
        t.expect(a >= 0 && b > a, `the text does not hold "${first}" then "${first} second": ${JSON.stringify(logs.text.slice(0, 200))}`);
      }
    },
  ),
];
