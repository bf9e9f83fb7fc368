// ERR: the v2 error envelope and its code-to-status table, Retry-After, generic server errors,
// and malformed input derived from the spec for every v2 operation (a 4xx, never a 5xx or a hang).
import { check, type Check, type T } from "../../check.ts";
import { CODE_STATUS, validator } from "../../machinery/contract.ts";
import type { RouteSpec } from "../../../generated/routes.ts";
import { leaksInternals, RequestTimeout } from "../../machinery/http.ts";
import { negativeCases, operationsWithInput } from "./negative.ts";
import { submit } from "../support/jobs.ts";
import { codeOf } from "../support/support.ts";
import { uiExport, simpleGraph } from "../support/workflows.ts";

/** Sends every negative case of an operation; each must be a 4xx (in the envelope on v2). */
export async function sendNegatives(t: T, route: RouteSpec): Promise<void> {
  const envelope = validator("schema_ErrorEnvelope")!;
  for (const c of negativeCases(route, Math.round(t.options.oversizeMb * 1024 * 1024))) {
    let ex;
    try {
      ex = await t.http.request(c.method, t.http.url(c.path), { body: c.body, headers: c.contentType ? { "content-type": c.contentType } : {} });
    } catch (err) {
      // HTTP lets a server close the connection on a body it will not read (RFC 9110, 413); a hang is never allowed.
      if (c.oversized && !(err instanceof RequestTimeout)) continue;
      t.softFail(`${c.name}: ${(err as Error).message}`);
      continue;
    }
    const ok = (ex.status >= 400 && ex.status < 500) || (c.alsoOk ?? []).includes(ex.status);
    t.expect(ok, `${c.name}: answered ${ex.status}, not a 4xx`, ex);
    if (route.family === "v2" && ex.status >= 400 && c.method !== "HEAD")
      t.expect(envelope(ex.json), `${c.name}: the ${ex.status} is not in the error envelope`, ex);
  }
}

function negativeCheck(route: RouteSpec): Check {
  return check(`ERR-1 ${route.operationId} answers malformed input with a 4xx in the envelope`, { timeoutMs: 300_000 }, (t: T) => sendNegatives(t, route));
}

function finalOver(t: T, pick: (s: (typeof t.http.seen)[number]) => boolean, what: string) {
  const seen = t.http.seen.filter(pick);
  t.need(seen.length > 0, `none of the run's ${t.http.seen.filter((s) => s.v2).length} v2 answers was ${what}: nothing to judge`);
  return seen;
}

export default [
  check("ERR-1 an unknown route under /api/v2 answers 404 in the envelope", async (t: T) => {
    const ex = await t.http.request("GET", t.http.url("/api/v2/conformance-no-such-route"));
    t.expect(ex.status === 404 && validator("schema_ErrorEnvelope")!(ex.json), `expected 404 in the envelope, got ${ex.status}`, ex);
  }),

  ...operationsWithInput("v2").map(negativeCheck),

  check("ERR-2 each error code comes with the status of the contract's table", async (t: T) => {
    const probes = [
      await t.http.request("GET", t.http.url(`/api/v2/jobs/${crypto.randomUUID()}`)),
      (await submit(t, uiExport(), { valid: false })).ex,
      (await submit(t, null, { body: { workflow: simpleGraph(), webhook_url: "https://example.invalid/hook" } })).ex,
      await t.http.request("POST", t.http.url("/api/v2/jobs"), { body: "{not json", headers: { "content-type": "application/json" } }),
    ];
    for (const ex of probes) {
      const code = codeOf(ex.json);
      t.expect(
        code !== undefined && CODE_STATUS.get(code) === ex.status,
        `code ${code} came with ${ex.status}; the table says ${code ? (CODE_STATUS.get(code) ?? "no such code") : "-"}`,
        ex,
      );
    }
  }),

  check("ERR-3 every 429 carries Retry-After as an integer number of seconds", { final: true }, async (t: T) => {
    for (const s of finalOver(t, (s) => s.status === 429 && s.v2, "a 429 (--fill-queue N brings one at the queue bound)")) {
      t.expect(s.retryAfter !== null && /^\d+$/.test(s.retryAfter.trim()), `${s.method} ${s.url}: Retry-After ${JSON.stringify(s.retryAfter)}`);
    }
  }),

  check("ERR-4 upstream_error messages are generic: no stack, path, SQL or upstream text", { final: true }, async (t: T) => {
    for (const s of finalOver(t, (s) => s.v2 && (s.code === "upstream_error" || s.status >= 500), "an upstream_error or a 5xx")) {
      t.expect(!leaksInternals(s.message ?? ""), `${s.method} ${s.url}: message ${JSON.stringify(s.message?.slice(0, 160))}`);
    }
  }),

  check("ERR-5 every server failure is 500 upstream_error in the envelope", { final: true }, async (t: T) => {
    for (const s of finalOver(t, (s) => s.v2 && s.status >= 500, "a 5xx")) {
      t.expect(s.status === 500 && s.code === "upstream_error", `${s.method} ${s.url}: ${s.status} ${s.code ?? "(no envelope)"}`);
    }
  }),
];
