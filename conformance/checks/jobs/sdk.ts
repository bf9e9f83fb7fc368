// SDK (contract 2.2, the project's extension group): what the official v2 SDK's listing and logs
// calls expect: the item fields of each listed job, 400 invalid_cursor for a cursor the server did
// not issue, and the logs resource `GET /api/v2/jobs/{id}/logs` with its `urls.logs` link (served
// where the surface serves logs; skipped, saying so, where it declares it does not).
import { check, type Applicability, type T } from "../../check.ts";
import type { Exchange } from "../../machinery/http.ts";
import { cancelJob, getLink, isJob, pollJob, runOk, slowGraph, started, submitOk, waitTerminal, type Job, type JobRef } from "../support/jobs.ts";
import { codeOf, deepEqual, RFC3339 } from "../support/support.ts";
import { nonce, printGraph, simpleGraph } from "../support/workflows.ts";

/** Applies where the surface serves logs to this caller (serverless, not the demo deployment). */
const servesLogs: Applicability = (r) =>
  !r.profile.logs
    ? `the ${r.options.surface} surface declares it serves no logs (SDK-4 checks that its jobs link none and the resource answers 204)`
    : r.options.demo
      ? "--demo was given: the demo deployment withholds logs (SDK-4 checks that)"
      : undefined;

/** Whether a job links its log (`urls.logs`, a non-empty string). */
function linksLog(ref: JobRef): boolean {
  const link = (ref.job.urls as Record<string, unknown> | undefined)?.logs;
  return typeof link === "string" && link !== "";
}

/** GET of the logs resource a client would build from the job id. */
function logsResource(t: T, id: string): Promise<Exchange> {
  return t.http.request("GET", t.http.url(`/api/v2/jobs/${encodeURIComponent(id)}/logs`));
}

/** A 204 as the contract means it: no body. */
function expectNoLog(t: T, ex: Exchange, where: string): void {
  t.expect(ex.status === 204, `${where}: GET /api/v2/jobs/{id}/logs answered ${ex.status} ${codeOf(ex.json) ?? ""}, expected 204 (no log to show)`, ex);
  if (ex.status === 204) t.expect(ex.text === "", `${where}: the 204 carries a body`, ex);
}

export default [
  check("SDK-1 each listed job carries create_time (its created_at), update_time (its last change) and deployment_id beside the full job", async (t: T) => {
    const end = await runOk(t, simpleGraph());
    const ex = await t.http.request("GET", t.http.url("/api/v2/jobs?limit=20"));
    const jobs = ((ex.json as { jobs?: unknown[] } | undefined)?.jobs ?? []).filter(isJob) as Array<Job & Record<string, unknown>>;
    const item = jobs.find((j) => j.id === end.job.id);
    if (!item) t.fail(`the finished job ${end.job.id} is not among the first 20 listed jobs (GET /api/v2/jobs answered ${ex.status})`, ex);
    t.expect(item.create_time === item.created_at, `create_time ${JSON.stringify(item.create_time)} is not created_at ${item.created_at}`, ex);
    const update = item.update_time;
    if (t.expect(typeof update === "string" && RFC3339.test(update), `update_time is ${JSON.stringify(update)}, not an RFC 3339 date-time`, ex)) {
      const at = Date.parse(update as string);
      t.expect(at >= Date.parse(item.created_at), `update_time ${update} is before created_at ${item.created_at}`, ex);
      if (item.completed_at)
        t.expect(at >= Date.parse(item.completed_at), `update_time ${update} is before completed_at ${item.completed_at}: the end is a change`, ex);
    }
    const deployment = item.deployment_id;
    if (t.profile.deploymentScoped)
      t.expect(typeof deployment === "string" && deployment !== "", `deployment_id is ${JSON.stringify(deployment)} on a serverless surface`, ex);
    else t.expect(deployment === null, `deployment_id is ${JSON.stringify(deployment)}, expected null off serverless`, ex);
  }),

  check("SDK-2 a listing cursor the server did not issue is 400 invalid_cursor in the envelope", async (t: T) => {
    for (const cursor of ["not-a-cursor", `conformance${nonce()}`]) {
      const ex = await t.http.request("GET", t.http.url(`/api/v2/jobs?cursor=${cursor}`));
      t.expect(
        ex.status === 400 && codeOf(ex.json) === "invalid_cursor",
        `cursor=${cursor} answered ${ex.status} ${codeOf(ex.json) ?? ""}, expected 400 invalid_cursor`,
        ex,
      );
    }
  }),

  check(
    "SDK-3 a job links its log as urls.logs, whose GET answers the finished job's JobLogs {text, truncated, captured_at, complete}, the log GET of the job embeds",
    { when: servesLogs },
    async (t: T) => {
      const graph = printGraph(`conformance-sdk-log-${nonce()}`);
      t.requireClasses(graph, "print");
      const created = await submitOk(t, graph);
      t.expect(linksLog(created), `the POST answer's urls carry no logs link: ${JSON.stringify(created.job.urls)}`, created.ex);
      const end = await waitTerminal(t, created);
      t.need(end.job.status === "succeeded", `the print graph ended ${end.job.status}`);
      if (!linksLog(end)) t.fail(`GET of the finished job links no log: urls ${JSON.stringify(end.job.urls)}`, end.ex);
      const ex = await getLink(t, end, "logs");
      if (ex.status !== 200) t.fail(`GET of urls.logs answered ${ex.status} ${codeOf(ex.json) ?? ""}, expected 200 with the log`, ex);
      const logs = ex.json as Record<string, unknown> | undefined;
      t.expect(
        typeof logs?.text === "string" && typeof logs.truncated === "boolean" && RFC3339.test(String(logs.captured_at)) && logs.complete === true,
        `the log is ${JSON.stringify(logs).slice(0, 200)}: text, truncated, captured_at and complete (true once the job has ended) are required`,
        ex,
      );
      t.expect(
        deepEqual(logs, end.job.logs),
        `GET of urls.logs (${JSON.stringify(logs).slice(0, 120)}) differs from the job's embedded logs (${JSON.stringify(end.job.logs).slice(0, 120)})`,
        ex,
      );
    },
  ),

  check(
    "SDK-4 GET /api/v2/jobs/{id}/logs answers 204 where there is no log to show: a job still running, and every job where the surface serves no logs (which link none); 404 for an unknown job",
    async (t: T) => {
      const running = await pollJob(t, await submitOk(t, slowGraph(t)), "the job starting", (j) => started(j));
      t.defer(async () => void (await cancelJob(t, running)));
      expectNoLog(t, await getLink(t, running, "logs"), "a running job");
      if (!t.profile.logs || t.options.demo) {
        const end = await runOk(t, simpleGraph());
        t.expect(
          !linksLog(end),
          `a surface that serves no logs links one: urls.logs ${JSON.stringify((end.job.urls as Record<string, unknown>).logs)}`,
          end.ex,
        );
        expectNoLog(t, await logsResource(t, end.job.id), "a finished job on a surface that serves no logs");
      }
      const missing = await logsResource(t, crypto.randomUUID());
      t.expect(
        missing.status === 404 && codeOf(missing.json) === "not_found",
        `an unknown job's log answered ${missing.status} ${codeOf(missing.json) ?? ""}, expected 404 not_found`,
        missing,
      );
    },
  ),
];
