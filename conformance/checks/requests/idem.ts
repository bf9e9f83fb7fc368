// IDEM: Idempotency-Key: single use, claimed only by a submission, released when it definitively
// fails, no replay, extra_data left out of the comparison.
import { check, type T } from "../../check.ts";
import { slowGraph, submit } from "../support/jobs.ts";
import { codeOf } from "../support/support.ts";
import { fillEnabled, fillQueue } from "../jobs/sub.ts";
import { missingInputGraph, simpleGraph } from "../support/workflows.ts";

const reuse = (status: number, body: unknown) => status === 422 && codeOf(body) === "idempotency_key_reuse";

export default [
  check("IDEM-1 the first request presenting a key is processed normally", async (t: T) => {
    const { ex, ref } = await submit(t, simpleGraph(), { key: crypto.randomUUID() });
    t.expect(ex.status === 201 && !!ref, `the first use of a key answered ${ex.status}`, ex);
  }),

  check("IDEM-2 a retry with the same key and body is 422 idempotency_key_reuse", async (t: T) => {
    const key = crypto.randomUUID();
    const graph = simpleGraph();
    const first = await submit(t, graph, { key });
    t.need(first.ex.status === 201, `the first use answered ${first.ex.status} (IDEM-1)`);
    const again = await submit(t, graph, { key });
    t.expect(reuse(again.ex.status, again.ex.json), `the retry answered ${again.ex.status} ${codeOf(again.ex.json) ?? ""}`, again.ex);
  }),

  check("IDEM-2 the same key with a different body is 422 idempotency_key_reuse", async (t: T) => {
    const key = crypto.randomUUID();
    const first = await submit(t, simpleGraph(), { key });
    t.need(first.ex.status === 201, `the first use answered ${first.ex.status} (IDEM-1)`);
    const other = await submit(t, simpleGraph(), { key });
    t.expect(reuse(other.ex.status, other.ex.json), `a different body with the same key answered ${other.ex.status} ${codeOf(other.ex.json) ?? ""}`, other.ex);
  }),

  check("IDEM-2 concurrent duplicates: exactly one is accepted, the others are 422 idempotency_key_reuse", async (t: T) => {
    const key = crypto.randomUUID();
    const graph = simpleGraph();
    const all = await Promise.all(Array.from({ length: 6 }, () => submit(t, graph, { key })));
    const accepted = all.filter((r) => r.ex.status === 201);
    t.expect(accepted.length === 1, `${accepted.length} of 6 concurrent requests with one key were accepted`, accepted[1]?.ex ?? all[0]?.ex);
    for (const r of all)
      if (r.ex.status !== 201) t.expect(reuse(r.ex.status, r.ex.json), `a duplicate answered ${r.ex.status} ${codeOf(r.ex.json) ?? ""}`, r.ex);
  }),

  check("IDEM-3 a request refused before submission claims no key", async (t: T) => {
    const key = crypto.randomUUID();
    const bad = await submit(t, null, { key, body: { workflow: simpleGraph(), webhook_url: "https://example.invalid/hook" } });
    t.need(
      bad.ex.status >= 400 && bad.ex.status < 500,
      `a submission with the reserved field webhook_url answered ${bad.ex.status}, not a 4xx (reported under SUB-3)`,
    );
    if (t.options.token && !t.options.demo) {
      const unauth = await submit(t, simpleGraph(), { key, auth: { bearer: `conformance-invalid-${crypto.randomUUID()}` } });
      t.need(unauth.ex.status === 401, `an invalid token answered ${unauth.ex.status} (AUTH-4)`);
    }
    const ok = await submit(t, simpleGraph(), { key });
    t.expect(ok.ex.status === 201, `the key was claimed by a refused request: the valid one answered ${ok.ex.status} ${codeOf(ok.ex.json) ?? ""}`, ok.ex);
  }),

  check("IDEM-4 a key is released when validation fails", async (t: T) => {
    const key = crypto.randomUUID();
    const bad = await submit(t, missingInputGraph(), { key, valid: false });
    t.need(bad.ex.status === 422, `the invalid graph answered ${bad.ex.status} (SUB-6)`);
    const ok = await submit(t, simpleGraph(), { key });
    t.expect(ok.ex.status === 201, `the retry after a validation error answered ${ok.ex.status} ${codeOf(ok.ex.json) ?? ""}`, ok.ex);
  }),

  check("IDEM-4 a key refused with 429 queue_full is released", { when: fillEnabled, timeoutMs: 300_000 }, async (t: T) => {
    await fillQueue(t);
    const key = crypto.randomUUID();
    const graph = slowGraph(t);
    const refused = await submit(t, graph, { key });
    t.need(
      refused.ex.status === 429,
      `the keyed submission right after a 429 queue_full answered ${refused.ex.status} ${codeOf(refused.ex.json) ?? ""}, not 429: the queue had room again`,
    );
    for (const id of t.created) await t.http.request("POST", t.http.url(`/api/v2/jobs/${id}/cancel`));
    const ok = await t.until("room in the queue", async () => {
      const r = await submit(t, graph, { key });
      return r.ex.status === 429 ? undefined : r;
    });
    t.expect(ok.ex.status === 201, `the retry after queue_full answered ${ok.ex.status} ${codeOf(ok.ex.json) ?? ""}`, ok.ex);
  }),

  check("IDEM-7 no replay: a reused key never answers with the first job, and no Idempotency-Replayed header", async (t: T) => {
    const key = crypto.randomUUID();
    const graph = simpleGraph();
    const first = await submit(t, graph, { key });
    t.need(first.ref, `the first use answered ${first.ex.status} (IDEM-1)`);
    const again = await submit(t, graph, { key });
    for (const r of [first, again]) t.expect(!r.ex.headers.has("idempotency-replayed"), "an answer carries Idempotency-Replayed", r.ex);
    const id = (again.ex.json as { id?: unknown } | null)?.id;
    if (again.ex.status < 400) {
      // A 2xx is wrong either way; say which way: the first job replayed, or a second job run.
      const what =
        id === first.ref.job.id
          ? `the first job (${String(id)}) replayed`
          : `a new job ${typeof id === "string" ? id : "(no id)"}, so the key was not enforced`;
      t.expect(false, `the reuse answered ${again.ex.status} with ${what}`, again.ex);
    } else {
      t.expect(id !== first.ref.job.id, `the reuse answered ${again.ex.status} with the first job's id`, again.ex);
    }
  }),

  check("IDEM-8 extra_data is left out of the comparison: the same key with other extra_data is still a reuse", async (t: T) => {
    const key = crypto.randomUUID();
    const graph = simpleGraph();
    const [a, b] = [`conformance-secret-${crypto.randomUUID()}`, `conformance-secret-${crypto.randomUUID()}`];
    t.http.secrets.add(a);
    t.http.secrets.add(b);
    const first = await submit(t, graph, { key, extraData: { api_key_vendor_org: a } });
    t.need(first.ex.status === 201, `the first use answered ${first.ex.status}`);
    const again = await submit(t, graph, { key, extraData: { api_key_vendor_org: b } });
    t.expect(reuse(again.ex.status, again.ex.json), `other extra_data with the same key answered ${again.ex.status} ${codeOf(again.ex.json) ?? ""}`, again.ex);
  }),
];
