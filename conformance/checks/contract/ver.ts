// VER: contract 2.0.0: every operation the seed names is served, with the 2.0.0 shapes (the HTTP
// layer validates every answer against them).
import { check, type T } from "../../check.ts";
import { cancelJob, openEvents, runOk } from "../support/jobs.ts";
import { simpleGraph } from "../support/workflows.ts";

export default [
  check("VER-1 every v2 operation of contract 2.0.0 is served with its 2.0.0 shape", async (t: T) => {
    const end = await runOk(t, simpleGraph());
    const cancel = await cancelJob(t, end);
    t.expect(cancel.ex.status === 200, `POST urls.cancel answered ${cancel.ex.status}`, cancel.ex);
    const { stream, ex } = await openEvents(t, end);
    stream?.close();
    t.expect(!!stream, `GET urls.events answered ${ex?.status}`, ex);
    const out = end.job.outputs[0];
    t.need(out, "the job has no output (reported under OUT-2)");
    const { response } = await t.api.GET("/api/v2/assets/{id}", { params: { path: { id: out.id } } });
    t.expect(response.status === 200, `GET /api/v2/assets/{id} answered ${response.status}`, t.ex(response));
  }),
];
