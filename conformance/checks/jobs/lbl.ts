// LBL (contract 2.1, the project's extension group): job labels: the bounds of `metadata`, 422
// metadata_invalid naming the key, the labels on every view, listing by label (AND, with status
// and paging, newest first), 400 invalid_metadata_filter, a surface that declines labels (422
// metadata_not_supported: the other checks skip, saying so), and labels in the idempotency rule.
import { check, type T } from "../../check.ts";
import type { Exchange } from "../../machinery/http.ts";
import { TERMINAL } from "../../machinery/contract.ts";
import { cancelJob, isJob, openEvents, readJobOk, submit, waitTerminal, type Job, type JobRef } from "../support/jobs.ts";
import { codeOf, deepEqual } from "../support/support.ts";
import { simpleGraph } from "../support/workflows.ts";

type Labels = Record<string, string>;

const DECLINED = "the surface declines labels (422 metadata_not_supported; LBL-6 checks how)";

/** Skips when the answer is the surface declining labels. */
function skipIfDeclined(t: T, ex: Exchange): void {
  if (ex.status === 422 && codeOf(ex.json) === "metadata_not_supported") t.skip(DECLINED);
}

/** A labeled submission that must be accepted; skips where the surface declines labels. */
async function submitLabeled(t: T, metadata: unknown, o: { key?: string } = {}): Promise<JobRef> {
  const { ex, ref } = await submit(t, null, { body: { workflow: simpleGraph(), metadata }, ...o });
  skipIfDeclined(t, ex);
  if (!ref) t.fail(`a submission with metadata ${JSON.stringify(metadata).slice(0, 200)} answered ${ex.status} ${codeOf(ex.json) ?? ""}, expected 201`, ex);
  return ref;
}

/** A label value unique to this check, so that filters see only its jobs. */
function runTag(): string {
  return `conformance-${crypto.randomUUID()}`;
}

/** GET /api/v2/jobs with these query pairs (repeated names kept). */
async function list(t: T, pairs: Array<[string, string]>): Promise<{ ex: Exchange; jobs?: Job[]; next?: string | null }> {
  const q = new URLSearchParams(pairs).toString();
  const ex = await t.http.request("GET", t.http.url(`/api/v2/jobs${q ? `?${q}` : ""}`));
  const body = ex.json as { jobs?: unknown; next_cursor?: unknown } | undefined;
  if (ex.status !== 200 || !Array.isArray(body?.jobs)) return { ex };
  return { ex, jobs: body.jobs.filter(isJob), next: typeof body.next_cursor === "string" ? body.next_cursor : null };
}

/** A listing that must answer 200 with jobs, else fails. */
async function listOk(t: T, pairs: Array<[string, string]>): Promise<{ ex: Exchange; jobs: Job[]; next: string | null }> {
  const r = await list(t, pairs);
  skipIfDeclined(t, r.ex);
  if (!r.jobs) t.fail(`GET /api/v2/jobs?${new URLSearchParams(pairs)} answered ${r.ex.status} ${codeOf(r.ex.json) ?? ""}`, r.ex);
  return { ex: r.ex, jobs: r.jobs, next: r.next ?? null };
}

const ids = (jobs: Job[]) => jobs.map((j) => j.id);
const labelsOf = (j: unknown) => (j as { metadata?: unknown } | undefined)?.metadata;

/** The largest map the bounds allow: 16 pairs (fifteen 40-character keys using every allowed character between them, and a 1-character key), 256-character values. */
function atTheBounds(): Labels {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.".repeat(2);
  const out: Labels = { k: "x" };
  for (let i = 0; i < 15; i++) out[chars.slice(i * 4, i * 4 + 40)] = `${i}:`.padEnd(256, "v");
  return out;
}

export default [
  check(
    "LBL-1 labels at the bounds (16 pairs, 1- and 40-character keys of every allowed character, 256-character values) are accepted and echoed",
    async (t: T) => {
      const labels = atTheBounds();
      const ref = await submitLabeled(t, labels);
      t.expect(
        deepEqual(labelsOf(ref.job), labels),
        `the 201 job carries metadata ${JSON.stringify(labelsOf(ref.job))?.slice(0, 200)}, not the labels submitted`,
        ref.ex,
      );
      const plain = await submit(t, null, { body: { workflow: simpleGraph() } });
      t.expect(plain.ex.status === 201, `a submission without metadata answered ${plain.ex.status}`, plain.ex);
      const empty = await submit(t, null, { body: { workflow: simpleGraph(), metadata: {} } });
      t.expect(empty.ex.status === 201, `a submission with metadata {} answered ${empty.ex.status} ${codeOf(empty.ex.json) ?? ""}`, empty.ex);
    },
  ),

  check("LBL-2 a map outside the bounds is 422 metadata_invalid with the offending key in details.key", async (t: T) => {
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]));
    const cases: Array<{ what: string; metadata: unknown; key: string | null }> = [
      { what: "17 pairs", metadata: seventeen, key: null },
      { what: "not an object", metadata: ["a", "b"], key: null },
      { what: "an empty key", metadata: { ok: "v", "": "v" }, key: "" },
      { what: "a 41-character key", metadata: { ["k".repeat(41)]: "v" }, key: "k".repeat(41) },
      { what: "a key with a space", metadata: { ok: "v", "team name": "v" }, key: "team name" },
      { what: "a key with a slash", metadata: { "a/b": "v" }, key: "a/b" },
      { what: "a 257-character value", metadata: { ok: "v", long: "v".repeat(257) }, key: "long" },
      { what: "a value that is not a string", metadata: { n: 5 }, key: "n" },
    ];
    for (const c of cases) {
      const { ex } = await submit(t, null, { body: { workflow: simpleGraph(), metadata: c.metadata }, valid: false });
      skipIfDeclined(t, ex);
      const details = (ex.json as { error?: { details?: { key?: unknown } } } | undefined)?.error?.details;
      if (
        !t.expect(
          ex.status === 422 && codeOf(ex.json) === "metadata_invalid",
          `${c.what}: answered ${ex.status} ${codeOf(ex.json) ?? ""}, expected 422 metadata_invalid`,
          ex,
        )
      )
        continue;
      t.expect(
        !!details && Object.hasOwn(details, "key") && details.key === c.key,
        `${c.what}: details.key is ${JSON.stringify(details?.key)}, expected ${JSON.stringify(c.key)}`,
        ex,
      );
    }
  }),

  check("LBL-3 labels come back as submitted on POST, GET, the list, cancel and the SSE status event; {} without labels", async (t: T) => {
    const labels: Labels = { "conformance.run": runTag(), team: "a-b_c" };
    const ref = await submitLabeled(t, labels);
    const same = (where: string, job: unknown, ex?: Exchange) =>
      t.expect(deepEqual(labelsOf(job), labels), `${where} shows metadata ${JSON.stringify(labelsOf(job)) ?? "(absent)"}, not ${JSON.stringify(labels)}`, ex);
    same("the POST answer", ref.job, ref.ex);
    const { stream, ex: streamEx } = await openEvents(t, ref);
    if (!stream) t.fail(`the event stream answered ${streamEx?.status}`, streamEx);
    const first = await stream.waitFor((e) => e.event === "status", t.options.requestTimeoutMs);
    t.expect(!!first, "the stream sent no status event");
    if (first) same("the first SSE status event", first.json);
    const got = await readJobOk(t, ref);
    same("GET", got.job, got.ex);
    const page = await listOk(t, [["limit", "100"]]);
    const entry = page.jobs.find((j) => j.id === ref.job.id);
    t.expect(!!entry, "the job is not on the first page of the caller's jobs", page.ex);
    if (entry) same("the list entry", entry, page.ex);
    const { ex, ref: canceled } = await cancelJob(t, ref);
    if (!canceled) t.fail(`cancel answered ${ex.status}`, ex);
    same("the cancel answer", canceled.job, ex);
    await waitTerminal(t, ref);
    const last = await stream.waitFor((e) => e.event === "status" && TERMINAL.has(String((e.json as Job | undefined)?.status)), t.options.jobTimeoutMs);
    if (last) same("the terminal SSE status event", last.json);
    // Its own body: the run label would otherwise be its labels.
    const plain = await submit(t, null, { body: { workflow: simpleGraph() } });
    if (plain.ref)
      t.expect(
        deepEqual(labelsOf(plain.ref.job), {}),
        `a job submitted without labels shows metadata ${JSON.stringify(labelsOf(plain.ref.job)) ?? "(absent)"}, not {}`,
        plain.ex,
      );
  }),

  check("LBL-4 metadata[key]=value filters: every label must match (up to 3), with status and cursor paging, newest first", async (t: T) => {
    const tag = runTag();
    // Submitted oldest first: a, b, c; d carries another tag.
    const a = await submitLabeled(t, { "conformance.run": tag, color: "red", size: "s" });
    const b = await submitLabeled(t, { "conformance.run": tag, color: "red", size: "l" });
    const c = await submitLabeled(t, { "conformance.run": tag, color: "blue", size: "s" });
    await submitLabeled(t, { "conformance.run": `${tag}-other`, color: "red", size: "s" });
    const ends = new Map<string, string>();
    for (const r of [a, b, c]) ends.set(r.job.id, (await waitTerminal(t, r)).job.status);
    const run: [string, string] = ["metadata[conformance.run]", tag];
    const expectIds = async (what: string, pairs: Array<[string, string]>, want: JobRef[]) => {
      const { ex, jobs } = await listOk(t, pairs);
      t.expect(
        deepEqual(ids(jobs), ids(want.map((r) => r.job))),
        `${what}: listed ${JSON.stringify(ids(jobs))}, expected ${JSON.stringify(ids(want.map((r) => r.job)))} (newest first)`,
        ex,
      );
    };
    await expectIds("one filter", [run], [c, b, a]);
    await expectIds("two filters", [run, ["metadata[color]", "red"]], [b, a]);
    await expectIds("three filters", [run, ["metadata[color]", "red"], ["metadata[size]", "s"]], [a]);
    await expectIds("a value no job carries", [run, ["metadata[color]", "green"]], []);
    const ended = ends.get(a.job.id)!;
    await expectIds(
      `with status=${ended}`,
      [run, ["status", ended]],
      [c, b, a].filter((r) => ends.get(r.job.id) === ended),
    );
    await expectIds("with status=queued (they all ended)", [run, ["status", "queued"]], []);
    // Paging: one job a page, following next_cursor.
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 5; i++) {
      const { ex, jobs, next } = await listOk(t, [run, ["limit", "1"], ...(cursor ? ([["cursor", cursor]] as Array<[string, string]>) : [])]);
      t.expect(jobs.length <= 1, `a page of limit=1 carried ${jobs.length} jobs`, ex);
      seen.push(...ids(jobs));
      cursor = next;
      if (!cursor) break;
    }
    t.expect(
      deepEqual(seen, ids([c, b, a].map((r) => r.job))),
      `paging one job at a time listed ${JSON.stringify(seen)}, expected ${JSON.stringify(ids([c, b, a].map((r) => r.job)))}`,
    );
  }),

  check("LBL-5 a malformed label filter is 400 invalid_metadata_filter", async (t: T) => {
    const cases: Array<{ what: string; pairs: Array<[string, string]> }> = [
      { what: "an empty key", pairs: [["metadata[]", "x"]] },
      { what: "a key with a space", pairs: [["metadata[team name]", "x"]] },
      { what: "a 41-character key", pairs: [[`metadata[${"k".repeat(41)}]`, "x"]] },
      {
        what: "4 filters",
        pairs: [
          ["metadata[a]", "1"],
          ["metadata[b]", "2"],
          ["metadata[c]", "3"],
          ["metadata[d]", "4"],
        ],
      },
      {
        what: "a repeated key",
        pairs: [
          ["metadata[a]", "1"],
          ["metadata[a]", "2"],
        ],
      },
      { what: "a 257-character value", pairs: [["metadata[a]", "v".repeat(257)]] },
    ];
    for (const c of cases) {
      const { ex } = await list(t, c.pairs);
      skipIfDeclined(t, ex);
      t.expect(
        ex.status === 400 && codeOf(ex.json) === "invalid_metadata_filter",
        `${c.what}: answered ${ex.status} ${codeOf(ex.json) ?? ""}, expected 400 invalid_metadata_filter`,
        ex,
      );
    }
  }),

  check(
    "LBL-6 a surface that declines labels answers 422 metadata_not_supported to labels and to a label filter, and takes jobs without them",
    async (t: T) => {
      const { ex, ref } = await submit(t, null, { body: { workflow: simpleGraph(), metadata: { "conformance.run": runTag() } } });
      if (ref) t.skip("the surface accepts labels (LBL-1 to LBL-5 apply)");
      t.need(
        ex.status === 422 && codeOf(ex.json) === "metadata_not_supported",
        `a labeled submission answered ${ex.status} ${codeOf(ex.json) ?? ""}: neither accepted nor declined (LBL-1 reports it)`,
      );
      const plain = await submit(t, simpleGraph());
      t.expect(plain.ex.status === 201, `without labels a submission answered ${plain.ex.status} ${codeOf(plain.ex.json) ?? ""}`, plain.ex);
      const empty = await submit(t, null, { body: { workflow: simpleGraph(), metadata: {} } });
      t.expect(empty.ex.status === 201, `with metadata {} a submission answered ${empty.ex.status} ${codeOf(empty.ex.json) ?? ""}`, empty.ex);
      const filtered = await list(t, [["metadata[conformance.run]", "x"]]);
      t.expect(
        filtered.ex.status === 422 && codeOf(filtered.ex.json) === "metadata_not_supported",
        `a listing filtered by label answered ${filtered.ex.status} ${codeOf(filtered.ex.json) ?? ""}, expected 422 metadata_not_supported`,
        filtered.ex,
      );
    },
  ),

  check("LBL-7 a reused Idempotency-Key with other labels is 422 idempotency_key_reuse and creates no job", async (t: T) => {
    const tag = runTag();
    const key = crypto.randomUUID();
    const workflow = simpleGraph();
    const first = await submit(t, null, { key, body: { workflow, metadata: { "conformance.run": tag, v: "1" } } });
    skipIfDeclined(t, first.ex);
    t.need(first.ex.status === 201, `the first use answered ${first.ex.status} (IDEM-1, LBL-1)`);
    const again = await submit(t, null, { key, body: { workflow, metadata: { "conformance.run": tag, v: "2" } } });
    t.expect(
      again.ex.status === 422 && codeOf(again.ex.json) === "idempotency_key_reuse",
      `the same key and workflow with other labels answered ${again.ex.status} ${codeOf(again.ex.json) ?? ""}`,
      again.ex,
    );
    const page = await listOk(t, [["limit", "100"]]);
    const tagged = page.jobs.filter((j) => (labelsOf(j) as Labels | undefined)?.["conformance.run"] === tag);
    t.expect(tagged.length === 1, `${tagged.length} jobs carry this check's labels, expected 1`, page.ex);
  }),
];
