// GEN: the general rules: the graph format, polling first, resumability, links, one contract.
import { check, type T } from "../../check.ts";
import { TERMINAL } from "../../machinery/contract.ts";
import { cancelJob, openEvents, readJobOk, runOk, slowGraph, submit, submitOk, waitTerminal, type JobRef } from "../support/jobs.ts";
import { codeOf, deepEqual } from "../support/support.ts";
import { mixedGraph, simpleGraph, uiExport } from "../support/workflows.ts";

export default [
  check("GEN-1 an API-format graph with literal and link inputs is accepted and runs", async (t: T) => {
    await runOk(t, mixedGraph());
  }),

  check("GEN-1 a graph entry that is not a {class_type, inputs} node is 422 invalid_workflow", async (t: T) => {
    const graph = { ...simpleGraph(), "3": "not a node" };
    const { ex } = await submit(t, graph, { valid: false });
    t.expect(ex.status === 422 && codeOf(ex.json) === "invalid_workflow", `expected 422 invalid_workflow, got ${ex.status} ${codeOf(ex.json) ?? ""}`, ex);
  }),

  check("GEN-2 a UI export (nodes and links arrays) is 422 workflow_format_ui", async (t: T) => {
    const { ex } = await submit(t, uiExport(), { valid: false });
    t.expect(ex.status === 422 && codeOf(ex.json) === "workflow_format_ui", `expected 422 workflow_format_ui, got ${ex.status} ${codeOf(ex.json) ?? ""}`, ex);
  }),

  check("GEN-3 everything the event stream told is also on GET: the final status, outputs and progress", async (t: T) => {
    const ref = await submitOk(t, slowGraph(t));
    const { stream, ex } = await openEvents(t, ref);
    if (!stream) t.fail(`the event stream answered ${ex?.status}`, ex);
    const last = await stream.waitFor((e) => e.event === "status" && TERMINAL.has(String((e.json as { status?: unknown })?.status)), t.options.jobTimeoutMs);
    t.need(last, "the stream ended without a terminal status (reported under SSE-2)");
    const end = await readJobOk(t, ref);
    const streamed = last.json as JobRef["job"];
    t.expect(end.job.status === streamed.status, `GET says ${end.job.status}, the stream's last status says ${streamed.status}`);
    const ids = new Set(end.job.outputs.map((o) => o.id));
    for (const e of stream.events.filter((e) => e.event === "output")) {
      const id = (e.json as { id?: string })?.id;
      t.expect(!!id && ids.has(id), `the stream announced output ${id}, which GET does not list`);
    }
    for (const o of streamed.outputs ?? []) t.expect(ids.has(o.id), `the terminal status event lists output ${o.id}, which GET does not`);
    t.expect(deepEqual(end.job.progress, streamed.progress), "GET's progress differs from the terminal status event's");
  }),

  check("GEN-4 a finished job's status and outputs stay retrievable by id", async (t: T) => {
    const ref = await runOk(t, simpleGraph());
    t.expect(Date.parse(ref.job.expires_at) > Date.now(), `expires_at ${ref.job.expires_at} has already passed`);
    const { response } = await t.api.GET("/api/v2/jobs/{id}", { params: { path: { id: ref.job.id } } });
    const ex = t.ex(response)!;
    t.need(ex.status === 200, `GET by id answered ${ex.status}`);
    const again = ex.json as JobRef["job"];
    t.expect(again.id === ref.job.id && typeof again.status === "string", `GET by id returned ${JSON.stringify(again).slice(0, 120)}`, ex);
    t.expect(
      deepEqual(
        again.outputs.map((o) => o.id),
        ref.job.outputs.map((o) => o.id),
      ),
      "the outputs changed between two reads",
      ex,
    );
    for (const o of again.outputs) {
      const a = await t.api.GET("/api/v2/assets/{id}", { params: { path: { id: o.id } } });
      t.expect(a.response.status === 200, `output ${o.id} is not retrievable (${a.response.status})`, t.ex(a.response));
    }
  }),

  check("GEN-5 every answer about a job embeds the same follow-up links, and every output a url", async (t: T) => {
    const created = await submitOk(t, simpleGraph());
    const end = await waitTerminal(t, created);
    const canceled = await cancelJob(t, end);
    const views: Array<[string, JobRef["job"] | undefined]> = [
      ["POST /api/v2/jobs", created.job],
      ["GET", end.job],
      ["cancel", canceled.ref?.job],
    ];
    const { stream } = await openEvents(t, end);
    const first = await stream?.waitFor((e) => e.event === "status", t.options.requestTimeoutMs);
    if (first) views.push(["SSE status", first.json as JobRef["job"]]);
    for (const [where, job] of views) {
      if (!job?.urls) continue;
      t.expect(deepEqual(job.urls, created.job.urls), `${where} carries urls ${JSON.stringify(job.urls)}, POST carried ${JSON.stringify(created.job.urls)}`);
    }
    for (const o of end.job.outputs) t.expect(typeof o.url === "string" && o.url.length > 0, `output ${o.id} has no url`);
    t.expect(end.job.outputs.length > 0, "the finished job lists no output");
  }),

  check("GEN-6 the v2 contract is served under the base URL, mount prefix included", { static: true }, async (t: T) => {
    const ref = await submitOk(t, simpleGraph());
    t.expect(ref.from.startsWith(t.http.url("/api/v2/")), `the job came from ${ref.from}`);
    await readJobOk(t, ref);
  }),

  check("GEN-7 v2 has no saved workflows, model library, node introspection or named parameters", async (t: T) => {
    for (const path of ["/api/v2/workflows", "/api/v2/models", "/api/v2/object_info", "/api/v2/nodes", "/api/v2/parameters"]) {
      const ex = await t.http.request("GET", t.http.url(path));
      t.expect(ex.status === 404 || ex.status === 405, `GET ${path} answered ${ex.status}, as if v2 offered it`, ex);
    }
  }),

  check("GEN-8 jobs beyond the running slots are queued automatically, and all of them run", async (t: T) => {
    const refs: JobRef[] = [];
    for (let i = 0; i < 3; i++) refs.push(await submitOk(t, slowGraph(t)));
    for (const r of refs) {
      const end = await waitTerminal(t, r);
      t.expect(end.job.status === "succeeded", `job ${r.job.id} ended ${end.job.status}`);
    }
  }),
];
