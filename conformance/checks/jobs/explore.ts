// Sequences, not only single calls: a model-based check (fast-check's fc.commands and
// fc.asyncModelRun) drives random sequences of submit (with and without an idempotency key, with
// and without a label), get, cancel, list (label filter, page size, cursors to the end), reads
// of unknown ids, and uploads, from-hash, asset reads, deletes and range downloads over a few
// blobs of the sequence's own, against a small model of the caller's jobs and assets, and checks
// every answer against it.
// `--explore N` sequences (0: off), seeded (`--seed`); a failing sequence is shrunk and printed as
// a list of requests that replays it.
import type { AsyncCommand } from "fast-check";
import { check, type T } from "../../check.ts";
import { TERMINAL } from "../../machinery/contract.ts";
import type { Exchange } from "../../machinery/http.ts";
import { RUN_LABEL } from "../support/jobs.ts";
import { blake3Of, codeOf, deepEqual, multipart, pngBytes } from "../support/support.ts";
import { nonce, simpleGraph } from "../support/workflows.ts";

interface ModelJob {
  id: string;
  labels: Record<string, string>;
  /** The terminal status once a view showed one (it never changes). */
  terminal?: string;
}

interface ModelAsset {
  id: string;
  /** Which of the sequence's blobs it is over. */
  blob: number;
  deleted: boolean;
}

/**
 * The model: the caller's jobs of this sequence, oldest first, the keys submissions claimed, and
 * the assets of its uploads and from-hash calls (none where uploads are not offered).
 */
interface Model {
  jobs: ModelJob[];
  keys: string[];
  assets: ModelAsset[];
  uploadsOff?: boolean;
}

/** Whether the caller holds a live asset over a blob: then its bytes are known to it, and from-hash may use them. */
const holds = (m: Readonly<Model>, blob: number) => m.assets.some((a) => a.blob === blob && !a.deleted);

/** The surface, and the requests this sequence sent (for the replayable listing). */
interface Real {
  t: T;
  /** Label value shared by the jobs of one sequence, so that listings see only them. */
  tag: string;
  requests: string[];
  /** Bytes no other sequence uses, and their blake3 hashes. */
  blobs: Uint8Array[];
  hashes: string[];
}

type Cmd = AsyncCommand<Model, Real>;

class Mismatch extends Error {}

function expectThat(cond: boolean, message: string, ex?: Exchange): asserts cond {
  if (!cond)
    throw new Mismatch(
      `${message}${ex ? ` (${ex.method} ${new URL(ex.url).pathname}${new URL(ex.url).search} answered ${ex.status} ${ex.text.slice(0, 200)})` : ""}`,
    );
}

async function send(r: Real, method: string, path: string, json?: unknown, headers?: Record<string, string>): Promise<Exchange> {
  const hs = headers ? ` ${Object.entries(headers).map(([k, v]) => `-H '${k}: ${v}'`)}` : "";
  r.requests.push(`${method} ${path}${hs}${json !== undefined ? ` ${JSON.stringify(json)}` : ""}`);
  return r.t.http.request(method, r.t.http.url(path), { json, headers, note: "explore" });
}

const statusOf = (ex: Exchange) => String((ex.json as { status?: unknown } | undefined)?.status);
const labelsOf = (ex: Exchange) => (ex.json as { metadata?: unknown } | undefined)?.metadata;

class Submit implements Cmd {
  readonly key: "none" | "new" | "reuse";
  readonly label: "a" | "b" | null;
  constructor(key: "none" | "new" | "reuse", label: "a" | "b" | null) {
    this.key = key;
    this.label = label;
  }
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const labels: Record<string, string> = { [RUN_LABEL]: r.t.run.runLabel, explore: r.tag, ...(this.label ? { lab: this.label } : {}) };
    const reused = this.key === "reuse" ? m.keys.at(-1) : undefined;
    const key = reused ?? (this.key === "none" ? undefined : crypto.randomUUID());
    const ex = await send(r, "POST", "/api/v2/jobs", { workflow: simpleGraph(), metadata: labels }, key ? { "Idempotency-Key": key } : undefined);
    if (ex.status === 429) return; // a full queue is a legal answer; the key is released (IDEM-4)
    if (reused) {
      expectThat(
        ex.status === 422 && codeOf(ex.json) === "idempotency_key_reuse",
        "a reused Idempotency-Key was not refused with 422 idempotency_key_reuse",
        ex,
      );
      return;
    }
    expectThat(ex.status === 201, "a valid submission was not created (201)", ex);
    const id = String((ex.json as { id?: unknown }).id);
    expectThat(statusOf(ex) === "queued", `a new job reads ${statusOf(ex)}, not queued`, ex);
    expectThat(deepEqual(labelsOf(ex), labels), "the new job does not carry the labels submitted", ex);
    r.t.defer(async () => void (await r.t.http.request("POST", r.t.http.url(`/api/v2/jobs/${id}/cancel`), { raw: true }).catch(() => undefined)));
    m.jobs.push({ id, labels });
    if (key) m.keys.push(key);
  }
  toString = () => `submit(key: ${this.key}, label: ${this.label})`;
}

/** Reads or cancels the job at an index (modulo the jobs so far). */
class OnJob implements Cmd {
  readonly op: "get" | "cancel";
  readonly index: number;
  constructor(op: "get" | "cancel", index: number) {
    this.op = op;
    this.index = index;
  }
  check = (m: Readonly<Model>) => m.jobs.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const job = m.jobs[this.index % m.jobs.length]!;
    const ex = this.op === "get" ? await send(r, "GET", `/api/v2/jobs/${job.id}`) : await send(r, "POST", `/api/v2/jobs/${job.id}/cancel`);
    expectThat(ex.status === 200, `${this.op} of the caller's job ${job.id} did not answer 200`, ex);
    expectThat((ex.json as { id?: unknown }).id === job.id, `${this.op} of job ${job.id} answered another job`, ex);
    expectThat(deepEqual(labelsOf(ex), job.labels), `${this.op} of job ${job.id} shows other labels than it was submitted with`, ex);
    const status = statusOf(ex);
    if (job.terminal) expectThat(status === job.terminal, `job ${job.id} read ${job.terminal} before and now reads ${status}`, ex);
    // A job may have ended on its own since the last view; a cancel never leaves it queued or running.
    else if (this.op === "cancel") expectThat(status === "canceling" || TERMINAL.has(status), `a cancel of job ${job.id} answered it ${status}`, ex);
    if (TERMINAL.has(status)) job.terminal = status;
  }
  toString = () => `${this.op}(job ${this.index})`;
}

class List implements Cmd {
  readonly label: "a" | "b" | null;
  readonly limit: number;
  constructor(label: "a" | "b" | null, limit: number) {
    this.label = label;
    this.limit = limit;
  }
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const want = m.jobs.filter((j) => !this.label || j.labels.lab === this.label).reverse();
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page <= want.length + 1; page++) {
      const q = new URLSearchParams({ "metadata[explore]": r.tag, limit: String(this.limit) });
      if (this.label) q.set("metadata[lab]", this.label);
      if (cursor !== null) q.set("cursor", cursor);
      const ex = await send(r, "GET", `/api/v2/jobs?${q}`);
      expectThat(ex.status === 200, "a label-filtered listing did not answer 200", ex);
      const body = ex.json as { jobs: Array<{ id: string }>; next_cursor: string | null };
      expectThat(body.jobs.length <= this.limit, `a page of limit ${this.limit} holds ${body.jobs.length} jobs`, ex);
      seen.push(...body.jobs.map((j) => j.id));
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    const ids = want.map((j) => j.id);
    expectThat(deepEqual(seen, ids), `the listing (every page) gave [${seen.join(", ")}], the model [${ids.join(", ")}] (newest first)`);
  }
  toString = () => `list(label: ${this.label}, limit: ${this.limit})`;
}

class GetUnknown implements Cmd {
  check = () => true;
  async run(_m: Model, r: Real): Promise<void> {
    const ex = await send(r, "GET", `/api/v2/jobs/${crypto.randomUUID()}`);
    expectThat(ex.status === 404 && codeOf(ex.json) === "not_found", "an unknown job id did not answer 404 not_found", ex);
  }
  toString = () => "get(unknown id)";
}

/** POST /api/v2/assets of one of the sequence's blobs. */
class Upload implements Cmd {
  readonly blob: number;
  constructor(blob: number) {
    this.blob = blob;
  }
  check = (m: Readonly<Model>) => !m.uploadsOff;
  async run(m: Model, r: Real): Promise<void> {
    const { body, contentType } = multipart([{ name: "file", value: r.blobs[this.blob]!, filename: "explore.png", contentType: "image/png" }]);
    r.requests.push(`POST /api/v2/assets (multipart: file = blob ${this.blob}, ${r.hashes[this.blob]})`);
    const ex = await r.t.http.request("POST", r.t.http.url("/api/v2/assets"), { body, headers: { "content-type": contentType }, note: "explore" });
    if (ex.status === 404 || ex.status === 405) {
      m.uploadsOff = true; // uploads are open in the contract
      return;
    }
    const body2 = ex.json as { id?: unknown; hash?: unknown; created_new?: unknown };
    const known = holds(m, this.blob);
    expectThat(ex.status === (known ? 200 : 201), `an upload of bytes the caller ${known ? "holds" : "does not hold"} did not answer ${known ? 200 : 201}`, ex);
    if (body2.created_new !== undefined) expectThat(body2.created_new === !known, `an upload answered created_new ${String(body2.created_new)}`, ex);
    expectThat(body2.hash === null || body2.hash === r.hashes[this.blob], "the upload's hash is not the blake3 of its bytes", ex);
    m.assets.push({ id: String(body2.id), blob: this.blob, deleted: false });
  }
  toString = () => `upload(blob ${this.blob})`;
}

/** POST /api/v2/assets/from-hash with one of the sequence's blobs. */
class FromHash implements Cmd {
  readonly blob: number;
  constructor(blob: number) {
    this.blob = blob;
  }
  check = (m: Readonly<Model>) => !m.uploadsOff;
  async run(m: Model, r: Real): Promise<void> {
    const ex = await send(r, "POST", "/api/v2/assets/from-hash", { hash: r.hashes[this.blob] });
    if (!holds(m, this.blob)) {
      expectThat(
        ex.status === 404 && codeOf(ex.json) === "blob_not_found",
        `from-hash of blob ${this.blob}, over which the caller holds no asset, did not answer 404 blob_not_found`,
        ex,
      );
      return;
    }
    expectThat(ex.status === 200 || ex.status === 201, `from-hash of blob ${this.blob}, which the caller holds, did not answer 200 or 201`, ex);
    const body = ex.json as { id?: unknown; hash?: unknown; created_new?: unknown };
    expectThat(body.hash === null || body.hash === r.hashes[this.blob], "from-hash answered an asset over other bytes", ex);
    if (body.created_new !== undefined) expectThat(body.created_new === false, "from-hash answered created_new true (always false)", ex);
    if (!m.assets.some((a) => a.id === body.id)) m.assets.push({ id: String(body.id), blob: this.blob, deleted: false });
  }
  toString = () => `fromHash(blob ${this.blob})`;
}

/** Reads, deletes or downloads a range of an asset of the sequence (by index from the newest, modulo the assets so far). */
class OnAsset implements Cmd {
  readonly op: "get" | "delete" | "range";
  readonly index: number;
  readonly start: number;
  readonly length: number;
  constructor(op: "get" | "delete" | "range", index: number, start = 0, length = 1) {
    this.op = op;
    this.index = index;
    this.start = start;
    this.length = length;
  }
  check = (m: Readonly<Model>) => m.assets.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    // Counted from the newest: a sequence's later commands mostly concern what it just made.
    const a = m.assets[m.assets.length - 1 - (this.index % m.assets.length)]!;
    const bytes = r.blobs[a.blob]!;
    if (this.op === "range") return this.range(a, bytes, r);
    const ex = await send(r, this.op === "get" ? "GET" : "DELETE", `/api/v2/assets/${a.id}`);
    if (a.deleted) {
      expectThat(ex.status === 404 && codeOf(ex.json) === "not_found", `${this.op} of asset ${a.id}, deleted before, did not answer 404 not_found`, ex);
      return;
    }
    if (this.op === "delete") {
      expectThat(ex.status === 204, `delete of the caller's upload ${a.id} did not answer 204`, ex);
      a.deleted = true;
      return;
    }
    const body = ex.json as { id?: unknown; hash?: unknown; size_bytes?: unknown };
    expectThat(ex.status === 200 && body.id === a.id, `get of the caller's asset ${a.id} did not answer it`, ex);
    expectThat(body.size_bytes === bytes.byteLength && (body.hash === null || body.hash === r.hashes[a.blob]), `asset ${a.id} is not the bytes uploaded`, ex);
  }

  private async range(a: ModelAsset, bytes: Uint8Array, r: Real): Promise<void> {
    const first = this.start % bytes.byteLength;
    const last = Math.min(bytes.byteLength - 1, first + this.length - 1);
    const headers = { range: `bytes=${first}-${last}` };
    r.requests.push(`GET /api/v2/assets/${a.id}/content -H 'range: ${headers.range}'`);
    let ex = await r.t.http.request("GET", r.t.http.url(`/api/v2/assets/${a.id}/content`), { headers, note: "explore" });
    // As production does, the content may redirect to a link that needs no credentials.
    const location = ex.headers.get("location");
    if (ex.status >= 300 && ex.status < 400 && location)
      ex = await r.t.http.request("GET", new URL(location, ex.url).toString(), { auth: "none", raw: true, headers, note: "explore" });
    if (a.deleted) {
      expectThat(ex.status === 404, `the content of asset ${a.id}, deleted before, did not answer 404`, ex);
      return;
    }
    expectThat(ex.status === 206, `Range ${headers.range} of asset ${a.id} (${bytes.byteLength} bytes) did not answer 206`, ex);
    expectThat(deepEqual([...ex.bytes], [...bytes.subarray(first, last + 1)]), `Range ${headers.range} of asset ${a.id} answered other bytes`, ex);
  }
  toString = () => (this.op === "range" ? `range(asset ${this.index}, from ${this.start}, ${this.length} bytes)` : `${this.op}Asset(asset ${this.index})`);
}

/** Ids (jobs, idempotency keys) of a sequence replaced by $ID1, $ID2... in order of appearance, so the listing replays. */
function replayable(requests: readonly string[]): string[] {
  const ids = new Map<string, string>();
  return requests.map((line) =>
    line.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => {
      if (!ids.has(id)) ids.set(id, `$ID${ids.size + 1}`);
      return ids.get(id)!;
    }),
  );
}

export default [
  check(
    "GET-1 random sequences of submit, get, cancel, list, upload, from-hash, asset reads, deletes and ranges agree with a model of the caller's jobs and assets (--explore N)",
    { when: (r) => (r.options.explore > 0 ? undefined : "exploring is off (--explore 0)"), timeoutMs: 600_000 },
    async (t: T) => {
      t.need(t.run.caps.labels, "the surface takes no labels, which scope the sequences' listings to their own jobs");
      // fast-check is a development dependency: an installed package without it skips, saying so.
      const fc = (await import("fast-check").catch(() => t.skip("fast-check is not installed (npm install fast-check runs the sequences)"))).default;
      const seed = t.options.seed ?? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
      const submit = fc
        .record({ key: fc.constantFrom("none", "new", "reuse"), label: fc.constantFrom(null, "a", "b") })
        .map((p) => new Submit(p.key, p.label) as Cmd);
      // Submissions three times as likely as each other command: listings then see pages of several jobs.
      const commands = [
        submit,
        submit,
        submit,
        fc.tuple(fc.constantFrom("get", "cancel"), fc.nat(15)).map(([op, i]) => new OnJob(op, i) as Cmd),
        fc.record({ label: fc.constantFrom(null, "a", "b"), limit: fc.integer({ min: 1, max: 3 }) }).map((p) => new List(p.label, p.limit) as Cmd),
        fc.constant(new GetUnknown() as Cmd),
        fc.nat(1).map((b) => new Upload(b) as Cmd),
        fc.nat(1).map((b) => new FromHash(b) as Cmd),
        fc
          .tuple(fc.constantFrom("get", "delete", "range"), fc.nat(3), fc.nat(200), fc.integer({ min: 1, max: 64 }))
          .map(([op, i, start, length]) => new OnAsset(op, i, start, length) as Cmd),
      ];
      let sequences = 0;
      const runOne = async (cmds: Iterable<Cmd>, requests: string[]) => {
        // Two small PNGs of colours of this sequence's own: no other caller or sequence holds them.
        const blobs = [0, 1].map((i) => pngBytes(3 + i, 2, [nonce(255), nonce(255), nonce(255), 255]));
        const hashes = await Promise.all(blobs.map((b) => blake3Of(b)));
        const real: Real = { t, tag: `${t.run.runLabel}-${seed}-${sequences++}`, requests, blobs, hashes };
        await fc.asyncModelRun(() => ({ model: { jobs: [], keys: [], assets: [] }, real }), cmds);
      };
      const out = await fc.check(
        fc.asyncProperty(fc.commands(commands, { maxCommands: 16, size: "max" }), (cmds) => runOne(cmds, [])),
        { numRuns: t.options.explore, seed },
      );
      if (!out.failed) return;
      const shrunk = out.counterexample?.[0];
      // Run the shrunk sequence once more to list its requests; its verdict is the one reported.
      const requests: string[] = [];
      let again = "";
      if (shrunk)
        await runOne(shrunk, requests).catch((e: Error) => {
          again = e.message;
        });
      const error = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
      t.fail(
        [
          `seed ${seed} (replay: --explore ${t.options.explore} --seed ${seed}), ${out.numRuns} sequences, shrunk ${out.numShrinks} times: ${again || error}`,
          `sequence: ${shrunk ? String(shrunk) : "(none)"}`,
          "requests:",
          ...replayable(requests).map((l) => `  ${l}`),
        ].join("\n"),
      );
    },
  ),
];
