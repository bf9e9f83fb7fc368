// GET: reading a job: the full job by id, 404 for an unknown one, nothing of another caller's.
import { check, type T } from "../../check.ts";
import { EventStream } from "../../machinery/stream.ts";
import { endOf, readJob, readJobOk, submitOk, waitTerminal } from "../support/jobs.ts";
import { codeOf } from "../support/support.ts";
import { simpleGraph } from "../support/workflows.ts";

export default [
  check("GET-1 GET /api/v2/jobs/{id} returns the full job, with every output committed", async (t: T) => {
    const created = await submitOk(t, simpleGraph());
    const read = await readJobOk(t, created);
    t.expect(read.job.id === created.job.id, `GET returned job ${read.job.id} for ${created.job.id}`);
    const end = await waitTerminal(t, created);
    t.need(end.job.status === "succeeded", `the simple graph's job ${endOf(end.job)}, not succeeded`);
    t.expect(end.job.outputs.length > 0, "the succeeded job lists no output");
  }),

  check("GET-1 an unknown job id is 404 not_found", async (t: T) => {
    const { response } = await t.api.GET("/api/v2/jobs/{id}", { params: { path: { id: crypto.randomUUID() } } });
    const ex = t.ex(response)!;
    t.expect(ex.status === 404 && codeOf(ex.json) === "not_found", `expected 404 not_found, got ${ex.status} ${codeOf(ex.json) ?? ""}`, ex);
  }),

  check(
    "GET-2 another caller cannot see, cancel or stream the caller's job (404 or 403)",
    {
      when: (r) => (r.options.otherToken ? undefined : "no second caller given (pass --other-token)"),
    },
    async (t: T) => {
      const other = { bearer: t.options.otherToken! };
      const ref = await submitOk(t, simpleGraph());
      const hidden = (s: number, body: unknown) => (s === 404 && codeOf(body) === "not_found") || (s === 403 && codeOf(body) === "forbidden");
      const read = await readJob(t, ref, other);
      t.expect(!read.ref && hidden(read.ex.status, read.ex.json), `another caller's GET answered ${read.ex.status}`, read.ex);
      const cancel = await t.http.request("POST", t.http.url(`/api/v2/jobs/${ref.job.id}/cancel`), { auth: other });
      t.expect(hidden(cancel.status, cancel.json), `another caller's cancel answered ${cancel.status}`, cancel);
      const { stream, ex } = await EventStream.open(t.http, t.http.url(`/api/v2/jobs/${ref.job.id}/events`), { auth: other });
      stream?.close();
      t.expect(!stream && !!ex && hidden(ex.status, ex.json), `another caller's event stream answered ${ex?.status ?? 200}`, ex);
      const mine = await readJobOk(t, ref);
      t.expect(mine.job.status !== "canceled" && mine.job.status !== "canceling", "another caller's cancel took effect");
    },
  ),
];
