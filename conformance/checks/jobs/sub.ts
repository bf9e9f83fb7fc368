// SUB: submission: the envelope, reserved fields, synchronous validation, the queue bound,
// deployment states, credits, and extra_data that never comes back.
import { check, type T } from "../../check.ts";
import type { Exchange } from "../../machinery/http.ts";
import { endedEarlyGraph, endOf, openEvents, readJobOk, submit, submitOk, waitTerminal } from "../support/jobs.ts";
import { codeOf, deepEqual } from "../support/support.ts";
import { assetGraph, danglingLinkGraph, missingInputGraph, simpleGraph, unknownClassGraph } from "../support/workflows.ts";

/** A rejection the seed allows for an envelope error: 400 or 422, in the envelope, and no job. */
function rejected(t: T, ex: Exchange, what: string): void {
  t.expect((ex.status === 400 || ex.status === 422) && codeOf(ex.json) !== undefined, `${what}: expected 400 or 422 in the envelope, got ${ex.status}`, ex);
}

/**
 * Fills the queue with slow jobs until a 429, within --fill-queue submissions; returns that 429.
 * The jobs are the long ones a check ends early (canceled when it ends): jobs of --slow-seconds
 * could finish as fast as a loaded machine submits them, and the queue would never fill.
 */
export async function fillQueue(t: T): Promise<Exchange> {
  for (let i = 0; i < t.options.fillQueue; i++) {
    const { ex } = await submit(t, endedEarlyGraph(t));
    if (ex.status === 429) return ex;
    if (ex.status !== 201) t.fail(`filling the queue: submission ${i + 1} answered ${ex.status}`, ex);
  }
  t.skip(
    `all ${t.options.fillQueue} slow jobs --fill-queue allows were accepted (201), none refused with 429: the queue bound is above that (a larger --fill-queue reaches it)`,
  );
}

/** Applies when --fill-queue allows filling the queue. */
export const fillEnabled = (r: { options: { fillQueue: number } }) => (r.options.fillQueue > 0 ? undefined : "filling the queue is off (pass --fill-queue N)");

export default [
  check("SUB-1 the workflow is accepted verbatim, with arbitrary properties such as _meta", async (t: T) => {
    const graph = simpleGraph();
    graph["1"]!._meta = { title: "conformance image" };
    graph["2"]!._meta = { title: "conformance save", conformance: { nested: [1, 2, 3] } };
    const ref = await submitOk(t, graph);
    const { response } = await t.api.GET("/api/v2/jobs/{id}/workflow", { params: { path: { id: ref.job.id } } });
    const ex = t.ex(response)!;
    if (ex.status === 404) return; // reading the graph back is an addition of this project's spec
    const body = ex.json as { workflow?: unknown };
    t.expect(ex.status === 200 && deepEqual(body?.workflow, graph), "the workflow read back differs from the one submitted", ex);
  }),

  check("SUB-2 extra_data is closed: another key or a non-string api_key_vendor_org is rejected", async (t: T) => {
    rejected(t, (await submit(t, simpleGraph(), { extraData: { conformance_other: "x" } })).ex, "an unknown extra_data key");
    rejected(t, (await submit(t, simpleGraph(), { extraData: { api_key_vendor_org: 42 } })).ex, "a numeric api_key_vendor_org");
    const key = `conformance-secret-${crypto.randomUUID()}`;
    t.http.secrets.add(key);
    const ok = await submit(t, simpleGraph(), { extraData: { api_key_vendor_org: key } });
    t.expect(ok.ex.status === 201, `a valid extra_data was refused (${ok.ex.status})`, ok.ex);
  }),

  check("SUB-3 the reserved fields webhook_url and inputs are rejected", async (t: T) => {
    for (const field of ["webhook_url", "inputs"]) {
      const { ex } = await submit(t, null, { body: { workflow: simpleGraph(), [field]: field === "inputs" ? {} : "https://example.invalid/hook" } });
      rejected(t, ex, field);
    }
  }),

  check("SUB-4 structure, unknown node classes and asset references are validated before a job exists", async (t: T) => {
    const cases: Array<[string, unknown, string]> = [
      ["a link to a missing node", danglingLinkGraph(), "invalid_workflow"],
      ["an unknown node class", unknownClassGraph(), "invalid_workflow"],
      ["an unknown asset", assetGraph(crypto.randomUUID()), "missing_asset"],
    ];
    for (const [what, graph, code] of cases) {
      const { ex } = await submit(t, graph, { valid: false });
      t.expect(ex.status === 422 && codeOf(ex.json) === code, `${what}: expected 422 ${code}, got ${ex.status} ${codeOf(ex.json) ?? ""}`, ex);
    }
  }),

  check("SUB-5 201 returns the job without logs", { static: true }, async (t: T) => {
    const { ex, ref } = await submit(t, simpleGraph());
    t.expect(ex.status === 201 && !!ref, `the submission answered ${ex.status}`, ex);
    if (ref) t.expect(!Object.hasOwn(ref.job, "logs"), "the 201 job carries logs", ex);
  }),

  check("SUB-6 an invalid graph is 422 invalid_workflow with details.node_errors: node id -> [{field, reason}]", async (t: T) => {
    const { ex } = await submit(t, missingInputGraph(), { valid: false });
    t.expect(ex.status === 422 && codeOf(ex.json) === "invalid_workflow", `expected 422 invalid_workflow, got ${ex.status} ${codeOf(ex.json) ?? ""}`, ex);
    const ne = (ex.json as { error?: { details?: { node_errors?: Record<string, unknown> } } })?.error?.details?.node_errors;
    const list = ne?.["2"];
    t.expect(Array.isArray(list) && list.length > 0, "details.node_errors has no entry for node 2 (the SaveImage without images)", ex);
    for (const e of Array.isArray(list) ? list : []) {
      t.expect(typeof e?.field === "string" && typeof e?.reason === "string", `node_errors["2"] entry ${JSON.stringify(e)} is not {field, reason}`, ex);
    }
  }),

  check("SUB-7 a core/ASSET reference to an unknown asset, or another caller's, is 422 missing_asset", async (t: T) => {
    const { ex } = await submit(t, assetGraph(crypto.randomUUID()), { valid: false });
    t.expect(
      ex.status === 422 && codeOf(ex.json) === "missing_asset",
      `an unknown asset: expected 422 missing_asset, got ${ex.status} ${codeOf(ex.json) ?? ""}`,
      ex,
    );
    const other = t.options.otherToken;
    if (!other) return;
    const auth = { bearer: other };
    const theirs = await waitTerminal(t, await submitOk(t, simpleGraph(), { auth }), { auth });
    const asset = theirs.job.outputs[0]?.id;
    t.need(asset, `the other caller's job ${endOf(theirs.job)} with no output`);
    const r = await submit(t, assetGraph(asset), { valid: false });
    t.expect(r.ex.status === 422 && codeOf(r.ex.json) === "missing_asset", `another caller's asset: expected 422 missing_asset, got ${r.ex.status}`, r.ex);
  }),

  check("SUB-8 at the queue bound a submission is 429 queue_full with Retry-After", { when: fillEnabled, timeoutMs: 300_000 }, async (t: T) => {
    const ex = await fillQueue(t);
    t.expect(codeOf(ex.json) === "queue_full", `the 429 carries code ${codeOf(ex.json)}, not queue_full`, ex);
    t.expect(ex.headers.has("retry-after"), "the 429 has no Retry-After", ex);
  }),

  check(
    "SUB-9 a provisioning deployment answers 429 deployment_not_ready, a stopped one 422 deployment_stopped",
    {
      surfaces: ["serverless"],
      when: (r) =>
        r.options.notReadyUrl || r.options.stoppedUrl ? undefined : "no deployment in those states given (pass --not-ready-url and/or --stopped-url)",
    },
    async (t: T) => {
      const cases: Array<[string | undefined, number, string]> = [
        [t.options.notReadyUrl, 429, "deployment_not_ready"],
        [t.options.stoppedUrl, 422, "deployment_stopped"],
      ];
      for (const [base, status, code] of cases) {
        if (!base) continue;
        const ex = await t.http.request("POST", `${base.replace(/\/+$/, "")}/api/v2/jobs`, { json: { workflow: simpleGraph() } });
        t.expect(ex.status === status && codeOf(ex.json) === code, `expected ${status} ${code}, got ${ex.status} ${codeOf(ex.json) ?? ""}`, ex);
      }
    },
  ),

  check(
    "SUB-10 an account without credits gets 402 insufficient_credits",
    {
      surfaces: ["cloud", "serverless"],
      when: (r) => (r.options.noCreditsToken ? undefined : "no account without credits given (pass --no-credits-token)"),
    },
    async (t: T) => {
      const { ex } = await submit(t, simpleGraph(), { auth: { bearer: t.options.noCreditsToken! } });
      t.expect(ex.status === 402 && codeOf(ex.json) === "insufficient_credits", `expected 402 insufficient_credits, got ${ex.status}`, ex);
    },
  ),

  check("SUB-10 the self-hosted surface never answers 402", { surfaces: ["self-hosted"], final: true }, async (t: T) => {
    const seen = t.http.seen.filter((s) => s.status === 402);
    t.expect(seen.length === 0, `${seen.length} answer(s) were 402, e.g. ${seen[0]?.method} ${seen[0]?.url}`);
  }),

  check("SUB-11 extra_data never comes back: not in the job, the list, the graph read back or the events", async (t: T) => {
    const secret = `conformance-secret-${crypto.randomUUID()}`;
    t.http.secrets.add(secret);
    const ref = await submitOk(t, simpleGraph(), { extraData: { api_key_vendor_org: secret } });
    const { stream } = await openEvents(t, ref);
    const end = await waitTerminal(t, ref);
    await stream?.waitEnd(t.options.requestTimeoutMs);
    const texts: Array<[string, string]> = [
      ["POST", JSON.stringify(ref.job)],
      ["GET", JSON.stringify((await readJobOk(t, end)).job)],
    ];
    const list = await t.http.request("GET", t.http.url("/api/v2/jobs?limit=20"));
    texts.push(["the list", list.text]);
    const wf = await t.http.request("GET", t.http.url(`/api/v2/jobs/${ref.job.id}/workflow`));
    texts.push(["the graph read back", wf.text]);
    for (const e of stream?.events ?? []) texts.push([`the ${e.event} event`, e.data]);
    if (t.run.caps.hosted) {
      texts.push(["GET /api/queue", (await t.http.request("GET", t.http.url("/api/queue"))).text]);
      texts.push(["GET /api/history", (await t.http.request("GET", t.http.url("/api/history"))).text]);
    }
    for (const [where, text] of texts) t.expect(!text.includes(secret), `${where} contains the extra_data value`);
  }),
];
