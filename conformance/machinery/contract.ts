// What the suite knows of the contract, all from generated/: the route table, the validators, the
// code-to-status table, and which rule a schema violation breaks.
import { JOB_STATUSES, TERMINAL_JOB_STATUSES } from "../../generated/enums.ts";
import type { ErrorObject, ValidateFunction } from "ajv";
import { routes, type RouteSpec } from "../../generated/routes.ts";
import * as validators from "../../generated/validators.js";

const byName = validators as unknown as Record<string, ValidateFunction | undefined>;

/** The generated validator with this export name. */
export function validator(name: string): ValidateFunction | undefined {
  return byName[name];
}

/** Every v2 error code and its only HTTP status, from the `x-error-codes` of the route table. */
export const CODE_STATUS: ReadonlyMap<string, number> = (() => {
  const map = new Map<string, number>();
  for (const r of routes) {
    if (r.family !== "v2") continue;
    for (const [status, resp] of Object.entries(r.responses)) for (const code of resp.errorCodes) map.set(code, Number(status));
  }
  return map;
})();

const compiled = routes.map((r) => ({
  route: r,
  re: new RegExp(`^${r.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "([^/]+)")}$`),
}));

/** The route a request addressed, trying the path with the mount prefix stripped first. */
export function matchRoute(method: string, pathname: string, basePath: string): RouteSpec | undefined {
  const candidates = basePath && pathname.startsWith(`${basePath}/`) ? [pathname.slice(basePath.length), pathname] : [pathname];
  for (const p of candidates) {
    for (const { route, re } of compiled) if (route.method === method.toUpperCase() && re.test(p)) return route;
  }
  return undefined;
}

/** Whether a path is under the v2 interface (after any mount prefix). */
export function isV2Path(pathname: string): boolean {
  return /\/api\/v2(\/|$)/.test(pathname);
}

/** v2 job statuses and the terminal ones, from the spec. */
export { JOB_STATUSES };
export const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_JOB_STATUSES);

/** Direct moves of ST-3; queued->canceled and queued->canceling are the open cancel-of-queued move. */
export const MOVES: Readonly<Record<string, readonly string[]>> = {
  queued: ["running", "canceled", "canceling"],
  running: ["succeeded", "failed", "expired", "canceling"],
  canceling: ["canceled"],
};

/** Whether `to` can follow `from` through zero or more unobserved moves (polling can miss states). */
export function reachable(from: string, to: string): boolean {
  const seen = new Set<string>();
  const stack = [from];
  while (stack.length) {
    const s = stack.pop()!;
    for (const n of MOVES[s] ?? []) {
      if (n === to) return true;
      if (!seen.has(n)) {
        seen.add(n);
        stack.push(n);
      }
    }
  }
  return false;
}

/** What a body is, for attributing its schema violations to rules. */
export type BodyKind =
  | { kind: "job" }
  | { kind: "jobList" }
  | { kind: "asset"; rule: string }
  | { kind: "envelope" }
  | { kind: "rule"; rule: string }
  | { kind: "sse"; event: string }
  | { kind: "ws"; type: string };

const HOSTED_RULE: Record<string, string> = {
  hostedGetObjectInfo: "HOST-1",
  hostedGetNodeInfo: "HOST-1",
  hostedGetSystemStats: "HOST-1",
  hostedUploadImage: "HOST-2",
  hostedUploadMask: "HOST-3",
  hostedQueuePrompt: "HOST-4",
  hostedGetJobStatus: "HOST-5",
  hostedGetHistory: "HOST-5",
  hostedGetHistoryEntry: "HOST-5",
  hostedManageHistory: "HOST-5",
  hostedView: "HOST-6",
  hostedGetQueue: "HOST-7",
  hostedManageQueue: "HOST-7",
  hostedGetPromptInfo: "HOST-7",
  hostedInterrupt: "HOST-8",
  hostedWebSocket: "WS-1",
};

/** The rule that owns the success answer of an operation (an undeclared status is reported there). */
export function ownerRule(operationId: string): string {
  const own: Record<string, string> = {
    createJob: "SUB-5",
    getJob: "GET-1",
    cancelJob: "CAN-1",
    streamJobEvents: "SSE-1",
    listJobs: "AST-4",
    getJobWorkflow: "SUB-1",
    getAsset: "AST-1",
    getAssetContent: "OUT-5",
    uploadAsset: "AST-4",
    createAssetFromHash: "AST-4",
    checkAssetHash: "AST-4",
    deleteAsset: "AST-4",
    getHealth: "GEN-6",
    getReadiness: "GEN-6",
  };
  return own[operationId] ?? HOSTED_RULE[operationId] ?? "GEN-6";
}

/** How the body of a response to this operation and status is attributed. */
export function bodyKindOf(route: RouteSpec, status: number): BodyKind {
  if (status >= 400) return route.family === "hosted" ? { kind: "rule", rule: "HOST-9" } : { kind: "envelope" };
  switch (route.operationId) {
    case "createJob":
    case "getJob":
    case "cancelJob":
      return { kind: "job" };
    case "listJobs":
      return { kind: "jobList" };
    case "getAsset":
      return { kind: "asset", rule: "AST-1" };
    case "uploadAsset":
    case "createAssetFromHash":
      return { kind: "asset", rule: "AST-4" };
    default:
      return { kind: "rule", rule: ownerRule(route.operationId) };
  }
}

/** The value at a JSON pointer (ajv's instancePath). */
export function valueAt(root: unknown, pointer: string): unknown {
  let v: unknown = root;
  for (const raw of pointer.split("/").slice(1)) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

/** Rule broken by a schema error inside a job object (path relative to the job). */
function jobRule(path: string, e: ErrorObject, value: unknown): string {
  const seg = path.split("/")[1] ?? "";
  if (seg === "") return "JOB-1";
  // JobWithoutLogs forbids the property (`logs: false`): logs where they may not appear.
  if (seg === "logs" && e.keyword === "false schema") return "LOG-5";
  switch (seg) {
    case "status":
      return "ST-1";
    case "created_at":
    case "started_at":
    case "completed_at":
    case "expires_at":
      return e.keyword === "format" ? "JOB-2" : "JOB-1";
    case "queue_position":
      return "JOB-6";
    case "progress":
      return "PRG-1";
    case "outputs":
      return outputRule(path.split("/").slice(3).join("/"));
    case "error":
      return "JERR-1";
    case "urls":
      return "URL-1";
    case "metrics":
      return "JOB-5";
    case "metadata":
      return "LBL-3";
    case "logs":
      return path === "/logs" && value === null ? "LOG-3" : "LOG-6";
    default:
      return "JOB-1";
  }
}

/** Rule broken by a schema error inside an Output (path relative to the output, no leading slash). */
function outputRule(rest: string): string {
  return rest === "type" ? "OUT-2" : "OUT-1";
}

/** One rule violation found in a body: the rule, and a one-line description. */
export interface Violation {
  rule: string;
  message: string;
}

/** The rules a body's schema errors break, one violation per rule, most specific message first. */
export function attribute(kind: BodyKind, errors: readonly ErrorObject[], body: unknown): Violation[] {
  const out = new Map<string, { message: string; depth: number }>();
  for (const e of errors) {
    const rule = ruleOfError(kind, e, body);
    const message = `${e.instancePath || "(root)"} ${e.message ?? e.keyword}`;
    // Prefer the deepest error that is not a oneOf summary: it names the offending field.
    const depth = e.instancePath.split("/").length + (e.keyword === "oneOf" ? 0 : 0.5);
    const prev = out.get(rule);
    if (!prev || depth > prev.depth) out.set(rule, { message, depth });
  }
  return [...out].map(([rule, v]) => ({ rule, message: v.message }));
}

function ruleOfError(kind: BodyKind, e: ErrorObject, body: unknown): string {
  const value = valueAt(body, e.instancePath);
  switch (kind.kind) {
    case "job":
      return jobRule(e.instancePath, e, value);
    case "jobList": {
      const m = /^\/jobs\/\d+(\/.*)?$/.exec(e.instancePath);
      return m ? jobRule(m[1] ?? "", e, value) : "AST-4";
    }
    case "asset":
      return /^\/(hash|id)(\/|$)/.test(e.instancePath) ? "AST-3" : kind.rule;
    case "envelope":
      if (e.instancePath.startsWith("/error/code")) return "ERR-2";
      if (e.instancePath.startsWith("/error/details/node_errors")) return "SUB-6";
      return "ERR-1";
    case "rule":
      return kind.rule;
    case "sse":
      switch (kind.event) {
        case "status":
          return e.instancePath === "" && e.keyword === "type" ? "SSE-2" : jobRule(e.instancePath, e, value);
        case "progress":
          return "PRG-1";
        case "output":
          return outputRule(e.instancePath.slice(1));
        case "preview":
          return "SSE-3";
        default:
          return "SSE-2";
      }
    case "ws":
      if (e.instancePath === "" || e.instancePath === "/type") return "WS-2";
      if (e.instancePath.startsWith("/data/exception_type")) return "WS-4";
      if (e.instancePath.startsWith("/data/output")) return "WS-6";
      return "WS-3";
  }
}
