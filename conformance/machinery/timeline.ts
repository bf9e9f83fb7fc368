// One timeline per job: every view of a job the suite receives (POST, GET, list entries, cancel
// answers, SSE events, hosted status and history, WebSocket messages), with when it was asked for
// and when it arrived. The invariants compare each view with the views that certainly came before
// it: those that arrived before it was asked for, and those earlier on the same connection. A read
// in flight while the job moved is never taken for a step back.
import { TERMINAL } from "./contract.ts";
import { NON_RETRYABLE_JOB_ERROR_CODES } from "../../generated/enums.ts";

type Obj = Record<string, unknown>;

/** How a view was obtained, for the final re-reads. */
export type ViewAuth = "auto" | "none" | { bearer: string } | { apiKey: string };

/** One view of one job. */
export interface View {
  /** Arrival order over the whole run. */
  n: number;
  job: string;
  /** Where it came from: `GET /api/v2/jobs/{id}`, `SSE progress`, `hosted status`... */
  source: string;
  /** Lower bound of the moment the server took it: when the request (or the connection) was made. */
  sent: number;
  /** When it arrived. */
  at: number;
  /** The connection it came on (events of one connection are in the server's order). */
  stream?: string;
  kind: "job" | "progress" | "output" | "event" | "outcome";
  /** v2 status of a job view or SSE status event. */
  status?: string;
  /** v2 statuses a hosted, history or WebSocket view is compatible with; undefined while in flight. */
  outcome?: readonly string[];
  /** Family of an outcome view: its rule when it disagrees with v2. */
  family?: "hosted" | "ws";
  /** The hosted status itself (`GET /api/job/{id}/status`), for the error code it must tell. */
  hostedStatus?: string;
  body?: Obj;
  /** The request that brought it, for the report. */
  request?: string;
  auth?: ViewAuth;
}

/** What one view says, quoted in a report. */
export function quote(v: View, t0: number, max = 300): string {
  const body = v.body ? JSON.stringify(v.body) : v.outcome ? `outcome ${v.outcome.join("|")}` : "in flight";
  return `${v.source} at +${Math.round(v.at - t0)} ms: ${body.length > max ? `${body.slice(0, max)}…` : body}`;
}

/** What the views up to some point have shown (each entry quotes the view that showed it). */
interface Summary {
  maxStatus?: View;
  terminal?: View;
  outcomeTerminal?: View;
  stamps: Record<string, View>;
  value?: View;
  nodesDone?: View;
  steps: Map<string, View>;
  progress?: View;
  outputs: Map<string, { view: View; out: Obj }>;
  terminalEvent?: View;
  canceling?: View;
  /** The first v2 job view that carried labels (`metadata`). */
  labels?: View;
}

const EMPTY: Summary = { stamps: {}, steps: new Map(), outputs: new Map() };
const RANK: Record<string, number> = { queued: 0, running: 1, canceling: 2, succeeded: 3, canceled: 3, failed: 3, expired: 3 };
const STAMPS = ["created_at", "started_at", "completed_at"] as const;
/** Fields of a terminal job compared under ST-4; the rest have rules of their own or may vary per view. */
const VOLATILE = new Set(["logs", "urls", "outputs", "progress", "created_at", "started_at", "completed_at", "metadata"]);

const isObj = (v: unknown): v is Obj => !!v && typeof v === "object" && !Array.isArray(v);
const num = (v: unknown) => (typeof v === "number" ? v : undefined);
const progressOf = (v: View): Obj | null | undefined =>
  v.kind === "progress" ? (v.body ?? null) : v.kind === "job" && v.body && Object.hasOwn(v.body, "progress") ? (v.body.progress as Obj | null) : undefined;
const outputsOf = (v: View): Obj[] | undefined =>
  v.kind === "job" && Array.isArray(v.body?.outputs) ? (v.body.outputs as Obj[]).filter(isObj) : v.kind === "output" && v.body ? [v.body] : undefined;

/** Structural equality of JSON values (key order ignored). */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isObj(a) && !Array.isArray(a)) return false;
  if (Array.isArray(a) !== Array.isArray(b) || !b || typeof b !== "object") return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => same(x, (b as unknown[])[i]));
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && same(a[k], (b as Obj)[k]));
}

/** The fields of an output a later view must repeat: its link may be re-signed, a lazy hash may appear. */
function outputDiff(a: Obj, b: Obj): string | undefined {
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (k === "url" || k === "url_expires_at") continue;
    if (k === "hash" && a.hash === null) continue;
    if (!same(a[k], b[k])) return `${k} ${JSON.stringify(a[k])} -> ${JSON.stringify(b[k])}`;
  }
  return undefined;
}

/** A violation found by comparing views: the rule, what broke, the earlier and the later view. */
export interface Finding {
  rule: string;
  message: string;
  key: string;
  earlier?: View;
  later: View;
}

interface JobLine {
  views: View[];
  /** Summary after each view, parallel to views. */
  cum: Summary[];
  checked: number;
  streams: Map<string, Summary>;
  auth?: ViewAuth;
  /** Seen through the v2 interface (POST, GET, list, cancel, SSE) or the hosted one. */
  v2: boolean;
  hosted: boolean;
}

/** Per-job timelines and the invariants over them. */
export class Timeline {
  readonly t0 = performance.now();
  readonly jobs = new Map<string, JobLine>();
  /** Outputs by asset id (first sighting) and asset records by id, for AST-1. */
  readonly outputs = new Map<string, { view: View; out: Obj }>();
  readonly assets = new Map<string, { source: string; at: number; record: Obj }>();
  private n = 0;
  private readonly report: (f: Finding) => void;
  private readonly evaluated: (...rules: string[]) => void;
  private readonly basePath: string;

  constructor(basePath: string, report: (f: Finding) => void, evaluated: (...rules: string[]) => void) {
    this.basePath = basePath;
    this.report = report;
    this.evaluated = evaluated;
  }

  now(): number {
    return performance.now();
  }

  /** Adds a view of a job (in arrival order: call it when the view arrives). */
  add(v: Omit<View, "n" | "at"> & { at?: number }): void {
    const view: View = { ...v, n: ++this.n, at: v.at ?? performance.now() };
    let line = this.jobs.get(view.job);
    if (!line) this.jobs.set(view.job, (line = { views: [], cum: [], checked: 0, streams: new Map(), v2: false, hosted: false }));
    if (line.auth === undefined && view.auth !== undefined) line.auth = view.auth;
    if (view.kind === "outcome" && view.family === "hosted") line.hosted = true;
    else if (view.kind !== "outcome") line.v2 = true;
    line.views.push(view);
  }

  /** An asset record (GET /api/v2/assets/{id}). */
  addAsset(record: Obj, source: string): void {
    if (typeof record.id !== "string") return;
    const prev = this.outputs.get(record.id);
    this.assets.set(record.id, { source, at: performance.now(), record });
    if (prev) this.compareAsset(prev.view, prev.out, record, source);
  }

  /** Runs the invariants over every view not yet checked. */
  verify(): void {
    for (const line of this.jobs.values()) {
      for (let i = line.checked; i < line.views.length; i++) {
        const y = line.views[i]!;
        // The views that certainly came before y: arrived before it was asked for.
        let p = i - 1;
        while (p >= 0 && line.views[p]!.at > y.sent) p--;
        const before = p >= 0 ? line.cum[p]! : EMPTY;
        const all = i > 0 ? line.cum[i - 1]! : EMPTY;
        const onStream = y.stream ? (line.streams.get(y.stream) ?? EMPTY) : undefined;
        this.single(y);
        this.compare(y, before, all, onStream);
        line.cum[i] = fold(all, y);
        if (y.stream) line.streams.set(y.stream, fold(onStream!, y));
        this.sighting(y);
      }
      line.checked = line.views.length;
    }
  }

  /** Job ids worth a final re-read, with how to read them and when a view first showed them finished. */
  rereads(): Array<{ id: string; auth?: ViewAuth; v2: boolean; hosted: boolean; terminal: boolean; endedAt?: number }> {
    return [...this.jobs].map(([id, l]) => {
      const last = l.cum.at(-1);
      const end = last?.terminal ?? last?.outcomeTerminal;
      return { id, auth: l.auth, v2: l.v2, hosted: l.hosted, terminal: end !== undefined, endedAt: end?.at };
    });
  }

  private find(f: Omit<Finding, "key"> & { key?: string }): void {
    this.report({ ...f, key: f.key ?? `${f.rule} ${f.message.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "ID").replace(/\d+/g, "N")}` });
  }

  /** Rules of one view alone that the answer validation does not cover (progress events). */
  private single(y: View): void {
    if (y.kind !== "progress" || !y.body) return;
    const p = y.body;
    const [done, total, step, steps] = [num(p.nodes_done), num(p.nodes_total), num(p.step), num(p.steps)];
    if (done !== undefined && total !== undefined && done > total)
      this.find({ rule: "PRG-1", message: `nodes_done ${done} exceeds nodes_total ${total}`, later: y });
    if (step !== undefined && steps !== undefined && step > steps) this.find({ rule: "PRG-1", message: `step ${step} exceeds steps ${steps}`, later: y });
    this.evaluated("PRG-1");
  }

  private compare(y: View, before: Summary, all: Summary, onStream: Summary | undefined): void {
    const job = y.job;
    // Nothing on a stream after its terminal status event.
    if (onStream?.terminalEvent) {
      this.find({
        rule: "SSE-2",
        message: `job ${job}: a ${y.source} event arrived after the terminal status event`,
        earlier: onStream.terminalEvent,
        later: y,
        key: "SSE-2 after terminal",
      });
      return;
    }
    if (y.stream) this.evaluated("SSE-2");
    if (y.kind === "outcome") return this.compareOutcome(y, before, all);
    const stepped = this.compareStatus(y, before) || (onStream ? this.compareStatus(y, onStream) : false);
    if (stepped) return;
    if (y.kind === "job") {
      this.compareTerminal(y, before);
      this.compareStamps(y, before);
      this.compareLabels(y, all);
      this.links(y);
      this.againstOutcomes(y, before, all);
    }
    this.compareProgress(y, before);
    if (onStream) this.compareProgress(y, onStream);
    this.compareOutputs(y, before);
    if (y.kind === "job" && y.status === "canceled" && onStream && onStream.maxStatus?.status === "running" && !onStream.canceling && all.canceling) {
      this.find({
        rule: "SSE-2",
        message: `job ${job}: the stream went running -> canceled, but another view showed canceling in between`,
        earlier: all.canceling,
        later: y,
        key: "SSE-2 canceling",
      });
    }
  }

  /** Status never steps back, and a terminal status never changes (whatever the view). */
  private compareStatus(y: View, s: Summary): boolean {
    if (y.status === undefined || RANK[y.status] === undefined) return false;
    const job = y.job;
    if (s.terminal && s.terminal.status !== y.status) {
      this.find({
        rule: "ST-4",
        message: `job ${job} was ${s.terminal.status} (terminal), then ${y.source} showed ${y.status}`,
        earlier: s.terminal,
        later: y,
      });
      return true;
    }
    const max = s.maxStatus;
    if (max && RANK[y.status]! < RANK[max.status!]!) {
      this.find({
        rule: "ST-3",
        message: `job ${job} was ${max.status}, then ${y.source} showed ${y.status}: the status stepped back`,
        earlier: max,
        later: y,
      });
      return true;
    }
    this.evaluated("ST-3", "ST-4");
    return false;
  }

  /** A terminal job never changes: every field without a rule of its own is the same in every later view. */
  private compareTerminal(y: View, s: Summary): void {
    const x = s.terminal;
    if (!x || !y.body || !x.body || y.status !== x.status) return;
    for (const k of Object.keys(y.body)) {
      if (VOLATILE.has(k) || !Object.hasOwn(x.body, k)) continue;
      if (!same(x.body[k], y.body[k])) {
        this.find({
          rule: "ST-4",
          message: `job ${y.job} is ${y.status}, yet its ${k} changed: ${JSON.stringify(x.body[k])} -> ${JSON.stringify(y.body[k])}`,
          earlier: x,
          later: y,
          key: `ST-4 ${k}`,
        });
        return;
      }
    }
    // The terminal status event carries every output GET shows at the end, not a subset.
    const [xo, yo] = [outputsOf(x) ?? [], outputsOf(y) ?? []];
    const sse = x.source.startsWith("SSE") ? x : y.source.startsWith("SSE") ? y : undefined;
    if (sse && xo.length !== yo.length) {
      this.find({
        rule: "SSE-2",
        message: `job ${y.job}: the terminal status event carries ${(sse === x ? xo : yo).length} outputs, ${(sse === x ? y : x).source} shows ${(sse === x ? yo : xo).length}`,
        earlier: x,
        later: y,
        key: "SSE-2 terminal outputs",
      });
    }
    this.evaluated("ST-4");
  }

  /** created_at, started_at, completed_at never change once set. */
  private compareStamps(y: View, s: Summary): void {
    for (const k of STAMPS) {
      const x = s.stamps[k];
      if (!x || !y.body || !Object.hasOwn(y.body, k)) continue;
      const [a, b] = [x.body![k], y.body[k]];
      if (a !== b && Date.parse(String(a)) !== Date.parse(String(b))) {
        this.find({
          rule: "JOB-7",
          message: `job ${y.job}: ${k} was ${JSON.stringify(a)}, then ${y.source} showed ${JSON.stringify(b)}`,
          earlier: x,
          later: y,
          key: `JOB-7 ${k}`,
        });
      }
    }
    this.evaluated("JOB-7");
  }

  /** A job's labels never change: every v2 view carries the same `metadata` (any earlier view counts). */
  private compareLabels(y: View, all: Summary): void {
    const x = all.labels;
    if (!x || !y.body) return;
    const [a, b] = [x.body!.metadata, y.body.metadata];
    if (!Object.hasOwn(y.body, "metadata") || !same(a, b)) {
      const shown = Object.hasOwn(y.body, "metadata") ? JSON.stringify(b) : "no metadata";
      this.find({
        rule: "LBL-3",
        message: `job ${y.job}: ${x.source} showed labels ${JSON.stringify(a)}, then ${y.source} showed ${shown}`,
        earlier: x,
        later: y,
        key: `LBL-3 ${y.source}`,
      });
      return;
    }
    this.evaluated("LBL-3");
  }

  /** Every view's host-relative links carry the mount prefix (the list's and the events' too). */
  private links(y: View): void {
    const urls = y.body?.urls;
    if (!isObj(urls)) return;
    const expected = `${this.basePath}/api/v2/`;
    for (const [name, link] of Object.entries(urls)) {
      if (typeof link === "string" && link.startsWith("/") && !link.startsWith(expected)) {
        this.find({
          rule: "URL-2",
          message: `${y.source}: urls.${name} ${link} does not start with the mount prefix ${expected}`,
          later: y,
          key: `URL-2 ${name}`,
        });
      }
    }
    this.evaluated("URL-2");
  }

  /** progress value, nodes_done and, within a node, step never decrease; GET shows progress while a stream does. */
  private compareProgress(y: View, s: Summary): void {
    const p = progressOf(y);
    if (p === undefined) return;
    if (p === null) {
      if (y.kind === "job" && y.status === "running" && s.progress && y.source.startsWith("GET")) {
        const q = progressOf(s.progress) as Obj;
        const at = num(q.step) !== undefined ? `step ${q.step}/${q.steps}` : `value ${q.value}`;
        this.find({
          rule: "GEN-3",
          message: `job ${y.job}: GET showed no progress while the job ran, after ${s.progress.source} reported ${at}`,
          earlier: s.progress,
          later: y,
          key: "GEN-3 progress",
        });
      }
      return;
    }
    const back = (what: string, x: View, a: unknown, b: unknown) =>
      this.find({
        rule: "PRG-2",
        message: `job ${y.job}: progress ${what} went from ${a} to ${b} (${x.source}, then ${y.source})`,
        earlier: x,
        later: y,
        key: `PRG-2 ${what}`,
      });
    const value = num(p.value);
    const xv = s.value ? num(progressOf(s.value)!.value) : undefined;
    if (value !== undefined && xv !== undefined && value < xv - 1e-9) return back("value", s.value!, xv, value);
    const done = num(p.nodes_done);
    const xd = s.nodesDone ? num(progressOf(s.nodesDone)!.nodes_done) : undefined;
    if (done !== undefined && xd !== undefined && done < xd) return back("nodes_done", s.nodesDone!, xd, done);
    const node = typeof p.current_node === "string" ? p.current_node : undefined;
    const step = num(p.step);
    const x = node !== undefined ? s.steps.get(node) : undefined;
    const xs = x ? num(progressOf(x)!.step) : undefined;
    if (step !== undefined && xs !== undefined && step < xs) return back(`step of node ${node}`, x!, xs, step);
    this.evaluated("PRG-2");
  }

  /** Outputs only grow, and an output once seen is the same in every later view. */
  private compareOutputs(y: View, s: Summary): void {
    const outs = outputsOf(y);
    if (!outs || s.outputs.size === 0) return;
    const mine = new Map(outs.filter((o) => typeof o.id === "string").map((o) => [o.id as string, o]));
    for (const [id, { view: x, out }] of s.outputs) {
      const now = mine.get(id);
      if (!now) {
        // A single output event names one output; a whole job must hold every output seen before.
        if (y.kind !== "job") continue;
        if (x.source.startsWith("SSE") && y.source.startsWith("SSE") && TERMINAL.has(y.status ?? "")) continue; // SSE-2's, above
        this.find({
          rule: "JOB-4",
          message: `job ${y.job}: output ${id} (seen in ${x.source}) is missing from ${y.source}`,
          earlier: x,
          later: y,
          key: "JOB-4 missing",
        });
        return;
      }
      const diff = outputDiff(out, now);
      if (diff) {
        this.find({
          rule: "JOB-4",
          message: `job ${y.job}: output ${id} changed between ${x.source} and ${y.source}: ${diff}`,
          earlier: x,
          later: y,
          key: `JOB-4 ${diff.split(" ")[0]}`,
        });
        return;
      }
    }
    this.evaluated("JOB-4");
  }

  /** Hosted status, history and WebSocket outcomes against v2 statuses. */
  private compareOutcome(y: View, before: Summary, all: Summary): void {
    const rule = y.family === "ws" ? "WS-3" : "HOST-5";
    if (!y.outcome) {
      // In flight after a terminal view that certainly came before.
      const x = before.terminal ?? before.outcomeTerminal;
      if (x && y.family === "hosted")
        this.find({
          rule,
          message: `job ${y.job} was terminal (${x.source}), then ${y.source} showed it in flight`,
          earlier: x,
          later: y,
          key: `${rule} in flight after terminal`,
        });
      return;
    }
    const x = all.terminal;
    if (x && !y.outcome.includes(x.status!))
      this.find({
        rule,
        message: `job ${y.job}: ${x.source} says ${x.status}, ${y.source} says ${y.outcome.join(" or ")}`,
        earlier: x,
        later: y,
        key: `${rule} outcome`,
      });
    else if (x && this.errorCodeTold(x, y)) this.evaluated(rule);
  }

  /**
   * A failed job's hosted status tells its error code (the spec's HostedJobStatus): one of the
   * codes of `x-non-retryable` is `non_retryable_error`, any other `error`. False when it does not.
   */
  private errorCodeTold(v2: View, hosted: View): boolean {
    const code = (v2.body?.error as { code?: unknown } | null | undefined)?.code;
    const told = hosted.hostedStatus;
    if (v2.status !== "failed" || typeof code !== "string" || (told !== "error" && told !== "non_retryable_error")) return true;
    const expected = (NON_RETRYABLE_JOB_ERROR_CODES as readonly string[]).includes(code) ? "non_retryable_error" : "error";
    if (told === expected) return true;
    this.find({
      rule: "HOST-5",
      message: `job ${hosted.job} failed with error code ${code} (${v2.source}), so its hosted status is ${expected}; ${hosted.source} says ${told}`,
      earlier: v2,
      later: hosted,
      key: "HOST-5 error code",
    });
    return false;
  }

  /** A v2 job view after a hosted or WebSocket terminal outcome: the same story. */
  private againstOutcomes(y: View, before: Summary, all: Summary): void {
    const o = all.outcomeTerminal;
    if (!o || y.status === undefined) return;
    const rule = o.family === "ws" ? "WS-3" : "HOST-5";
    if (TERMINAL.has(y.status)) {
      if (!o.outcome!.includes(y.status))
        this.find({
          rule,
          message: `job ${y.job}: ${o.source} says ${o.outcome!.join(" or ")}, ${y.source} says ${y.status}`,
          earlier: o,
          later: y,
          key: `${rule} outcome`,
        });
      else if (o.family === "hosted") this.errorCodeTold(y, o);
    } else if (before.outcomeTerminal && o.family === "hosted") {
      this.find({
        rule,
        message: `job ${y.job}: ${o.source} showed it finished, then ${y.source} showed ${y.status}`,
        earlier: before.outcomeTerminal,
        later: y,
        key: `${rule} in flight after terminal`,
      });
    }
  }

  /** First sightings of outputs, compared with their asset records (AST-1). */
  private sighting(y: View): void {
    for (const o of outputsOf(y) ?? []) {
      if (typeof o.id !== "string" || this.outputs.has(o.id)) continue;
      this.outputs.set(o.id, { view: y, out: o });
      const a = this.assets.get(o.id);
      if (a) this.compareAsset(y, o, a.record, a.source);
    }
  }

  private compareAsset(v: View, out: Obj, record: Obj, source: string): void {
    const pairs: Array<[string, unknown, unknown]> = [
      ["size_bytes", out.size_bytes, record.size_bytes],
      ["content_type", out.content_type, record.content_type],
      ["job_id", out.job_id ?? null, record.job_id ?? null],
      ["hash", out.hash ?? null, record.hash ?? null],
      ["name", out.name, record.file_path ?? null],
    ];
    for (const [k, a, b] of pairs) {
      if (a === null || b === null || a === undefined || b === undefined || same(a, b)) continue;
      const q = (x: unknown) => JSON.stringify(x);
      this.find({
        rule: "AST-1",
        message: `asset ${String(out.id)}: the output (${v.source}) says ${k === "name" ? "name" : k} ${q(a)}, its record (${source}) says ${k === "name" ? "file_path" : k} ${q(b)}`,
        earlier: v,
        later: { ...v, source, body: record },
        key: `AST-1 ${k}`,
      });
      return;
    }
    if (!this.expiresWithJob(v, out, record, source)) return;
    this.evaluated("AST-1");
  }

  /**
   * The spec: an output "expires with its job". Its record's `expires_at` (optional) must be the
   * job's; null, "does not expire", is wrong for an output of a job that expires.
   */
  private expiresWithJob(v: View, out: Obj, record: Obj, source: string): boolean {
    if (!("expires_at" in record) || typeof record.job_id !== "string") return true;
    const views = this.jobs.get(record.job_id)?.views ?? [];
    const jobView = views.findLast((x) => x.kind === "job" && typeof x.body?.expires_at === "string");
    if (!jobView) return true;
    const [job, asset] = [jobView.body!.expires_at as string, record.expires_at];
    if (typeof asset === "string" && Date.parse(asset) === Date.parse(job)) return true;
    this.find({
      rule: "AST-1",
      message: `asset ${String(out.id)}: the output of job ${record.job_id} expires with its job (${jobView.source}: expires_at ${job}), its record (${source}) says expires_at ${JSON.stringify(asset)}`,
      earlier: jobView,
      later: { ...v, source, body: record },
      key: "AST-1 expires_at",
    });
    return false;
  }
}

/** The summary after one more view. */
function fold(s: Summary, v: View): Summary {
  const out: Summary = { ...s, stamps: { ...s.stamps } };
  if (v.status !== undefined && RANK[v.status] !== undefined) {
    if (!out.maxStatus || RANK[v.status]! > RANK[out.maxStatus.status!]!) out.maxStatus = v;
    if (TERMINAL.has(v.status) && !out.terminal && v.kind === "job") out.terminal = v;
    if (v.status === "canceling") out.canceling ??= v;
    if (TERMINAL.has(v.status) && v.stream && v.kind === "job") out.terminalEvent ??= v;
  }
  if (v.kind === "outcome" && v.outcome) out.outcomeTerminal ??= v;
  if (v.kind === "job" && v.body) for (const k of STAMPS) if (v.body[k] != null) out.stamps[k] ??= v;
  if (v.kind === "job" && isObj(v.body?.metadata)) out.labels ??= v;
  const p = progressOf(v);
  if (p) {
    if (num(p.value) !== undefined && (!out.value || num(p.value)! > num(progressOf(out.value)!.value)!)) out.value = v;
    if (num(p.nodes_done) !== undefined && (!out.nodesDone || num(p.nodes_done)! > num(progressOf(out.nodesDone)!.nodes_done)!)) out.nodesDone = v;
    const node = typeof p.current_node === "string" ? p.current_node : undefined;
    if (node !== undefined && num(p.step) !== undefined) {
      const x = out.steps.get(node);
      if (!x || num(p.step)! > num(progressOf(x)!.step)!) out.steps = new Map(out.steps).set(node, v);
    }
    if (v.kind === "progress" || !TERMINAL.has(v.status ?? "")) out.progress ??= v;
  }
  const outs = outputsOf(v);
  if (outs?.some((o) => typeof o.id === "string" && !out.outputs.has(o.id))) {
    out.outputs = new Map(out.outputs);
    for (const o of outs) if (typeof o.id === "string" && !out.outputs.has(o.id)) out.outputs.set(o.id, { view: v, out: o });
  }
  return out;
}
