// HTTP from the bench process: the load generator (autocannon) and small JSON requests for setup.
import autocannon from "autocannon";
import type { BenchContext } from "./context.ts";
import { threeNodeBodyTemplate } from "./graphs.ts";
import { sleep } from "./stats.ts";

/** One load run against one endpoint. */
export interface LoadSpec {
  /** Origin, e.g. http://127.0.0.1:1234. */
  url: string;
  path: string;
  method?: "GET" | "POST";
  body?: string;
  headers?: Record<string, string>;
  /** Replace `[<id>]` in the request (headers and body) with a fresh id per request. */
  idReplacement?: boolean;
  connections: number;
  durationS: number;
}

/** What one load run measured. */
export interface LoadResult {
  /** 2xx answers per second. */
  rate: number;
  ok: number;
  non2xx: number;
  errors: number;
  /** Latency percentiles in ms, as autocannon reports them (1 ms resolution). */
  p50: number;
  p99: number;
  mean: number;
  durationS: number;
}

/** Drives one endpoint with autocannon for `durationS` seconds (bounded: it stops by itself). */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  const r = await autocannon({
    url: spec.url + spec.path,
    method: spec.method ?? "GET",
    connections: spec.connections,
    duration: spec.durationS,
    timeout: 30,
    ...(spec.body !== undefined ? { body: spec.body } : {}),
    headers: { ...(spec.body !== undefined ? { "content-type": "application/json" } : {}), ...(spec.headers ?? {}) },
    ...(spec.idReplacement ? { idReplacement: true } : {}),
  });
  const durationS = r.duration > 0 ? r.duration : spec.durationS;
  return {
    rate: r["2xx"] / durationS,
    ok: r["2xx"],
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    p50: r.latency.p50,
    p99: r.latency.p99,
    mean: r.latency.mean,
    durationS,
  };
}

/** A JSON answer. */
export interface JsonResponse {
  status: number;
  body: any;
  text: string;
  contentType: string;
}

/** One JSON request (setup and checks, never measured). */
export async function request(base: string, method: string, path: string, json?: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  const res = await fetch(base + path, {
    method,
    headers: { ...(json !== undefined ? { "content-type": "application/json" } : {}), ...headers },
    ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
  });
  const text = await res.text();
  const contentType = res.headers.get("content-type") ?? "";
  let body: unknown;
  if (contentType.includes("json") && text !== "") body = JSON.parse(text);
  return { status: res.status, body, text, contentType };
}

/** Submits a workflow and returns the 201 job, or throws with the answer. */
export async function submit(base: string, workflow: Record<string, unknown>): Promise<any> {
  const res = await request(base, "POST", "/api/v2/jobs", { workflow });
  if (res.status !== 201) throw new Error(`submit answered ${res.status}: ${res.text.slice(0, 500)}`);
  return res.body;
}

/** Polls GET /api/v2/jobs/{id} until `until` holds (bounded by timeoutMs). */
export async function waitJob(base: string, id: string, until: (job: any) => boolean, what: string, timeoutMs = 60_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await request(base, "GET", `/api/v2/jobs/${id}`);
    if (res.status === 200 && until(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} of job ${id}; last: ${res.text.slice(0, 500)}`);
    await sleep(20);
  }
}

/**
 * Measures groups of loads against each other (pairs, or a row of figures each compared with its
 * neighbour): a warm-up of each, then `httpRounds` rounds in which each group runs in turn, its
 * order reversed every other round (neither side always goes first on a warmer host).
 * `beforeRound` resets what a round's loads left (a queue they filled). Results by measure, in round order.
 */
export async function pairedRounds<M extends string>(
  ctx: BenchContext,
  name: string,
  pairs: ReadonlyArray<readonly M[]>,
  spec: (m: M) => Omit<LoadSpec, "durationS">,
  beforeRound: () => Promise<void>,
): Promise<Record<M, LoadResult[]>> {
  const s = ctx.sizes;
  const order = pairs.flat();
  const results = Object.fromEntries(order.map((m) => [m, [] as LoadResult[]])) as Record<M, LoadResult[]>;
  const measure = async (m: M, durationS: number): Promise<LoadResult> => {
    const r = await load({ ...spec(m), durationS });
    if (r.non2xx > 0 || r.errors > 0) ctx.warn(`${name} ${m}: ${r.non2xx} non-2xx answers and ${r.errors} errors in one run`);
    return r;
  };
  if (s.httpWarmupS > 0) {
    ctx.log(`${name}: warm-up`);
    for (const m of order) await measure(m, s.httpWarmupS);
  }
  for (let round = 1; round <= s.httpRounds; round++) {
    await beforeRound();
    for (const pair of pairs) {
      for (const m of round % 2 === 1 ? pair : [...pair].reverse()) results[m].push(await measure(m, s.httpDurationS));
    }
    ctx.log(`${name}: round ${round}/${s.httpRounds}: ${order.map((m) => `${m}=${Math.round(results[m].at(-1)!.rate)}/s`).join(" ")}`);
  }
  return results;
}

/** Durable submissions of the three-node graph to `url`, each with an Idempotency-Key of its own. */
export function submitLoad(url: string, connections: number): Omit<LoadSpec, "durationS"> {
  return {
    url,
    path: "/api/v2/jobs",
    method: "POST",
    body: threeNodeBodyTemplate(),
    headers: { "idempotency-key": "bench-[<id>]" },
    idReplacement: true,
    connections,
  };
}
