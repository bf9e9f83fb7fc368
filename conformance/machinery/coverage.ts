// The coverage index of a run, computed from the specs: which operations of the contract were
// called, which of their documented statuses came back, which query parameters were sent, and
// which AsyncAPI messages (SSE events, WebSocket messages, binary frame types) arrived. The report
// prints it beside the pass rate, with what was not reached and why.
import { routes, type RouteSpec } from "../../generated/routes.ts";
import { matchRoute } from "./contract.ts";
import { asyncapiDoc, deref, openapiDoc, type SpecDoc } from "./spec-files.ts";

/** The kinds of things a run can reach. */
export type CoverageKind = "operations" | "statuses" | "messages" | "queryParameters";
export const COVERAGE_KINDS: readonly CoverageKind[] = ["operations", "statuses", "messages", "queryParameters"];

/** One thing of the contract a run did not reach, and why. */
export interface Unreached {
  id: string;
  /** `not served`, `not supported (declared)`, `skipped` or `never reached`, with the details. */
  why: string;
}

/** Reached of total, per kind, with what was not reached. */
export interface CoverageCount {
  reached: number;
  total: number;
  unreached: Unreached[];
}

/** The coverage index of one run. */
export type CoverageIndex = Record<CoverageKind, CoverageCount>;

/** How a channel's messages arrive: an SSE stream (a channel with an http binding) or the WebSocket. */
export type Transport = "sse" | "ws";

/** One message of the AsyncAPI document that a client receives. */
interface MessageSpec {
  id: string;
  transport: Transport;
  name: string;
  binaryType?: number;
}

/** The operations a conformance run is about: the job contract and the hosted interface, not the operations endpoints. */
export const CONTRACT_ROUTES: readonly RouteSpec[] = routes.filter((r) => r.family !== "operations");

const opId = (r: RouteSpec) => `${r.method} ${r.path} (${r.operationId})`;

function queryParametersOf(r: RouteSpec): string[] {
  const doc = openapiDoc();
  const item = (doc.paths as SpecDoc)[r.path] as SpecDoc;
  const op = item[r.method.toLowerCase()] as SpecDoc;
  const params = [...((item.parameters as unknown[]) ?? []), ...((op.parameters as unknown[]) ?? [])].map((p) => deref(doc, p));
  return params.filter((p) => p.in === "query").map((p) => String(p.name));
}

/** Every message a client receives, from the `receive` operations of spec/asyncapi.yaml. */
export function receivedMessages(): MessageSpec[] {
  const doc = asyncapiDoc();
  const out: MessageSpec[] = [];
  for (const op of Object.values(doc.operations as Record<string, SpecDoc>)) {
    if (op.action !== "receive") continue;
    const channel = deref(doc, op.channel);
    const transport: Transport = op.bindings && (op.bindings as SpecDoc).http ? "sse" : "ws";
    for (const ref of (op.messages as unknown[]) ?? []) {
      const m = deref(doc, ref);
      const name = String(m.name);
      const binaryType = m["x-flowgate-binary-type"] as number | undefined;
      const where = transport === "sse" ? `SSE ${channel.address}` : `WebSocket ${channel.address}`;
      out.push({ id: binaryType !== undefined ? `${where} binary ${binaryType} (${name})` : `${where} ${name}`, transport, name, binaryType });
    }
  }
  return out;
}

/** What a run reached, filled in by the HTTP layer, the event stream and the WebSocket. */
export class Coverage {
  private readonly basePath: string;
  /** operationId -> statuses seen. */
  private readonly statuses = new Map<string, Set<string>>();
  /** operationId -> query parameter names sent. */
  private readonly queries = new Map<string, Set<string>>();
  private readonly messages = new Set<string>();
  private readonly specs = receivedMessages();

  constructor(basePath: string) {
    this.basePath = basePath;
  }

  /** One answer of the surface to a request the suite sent (any status, 101 for an upgrade). */
  exchange(method: string, url: string, status: number): void {
    const u = new URL(url);
    const route = matchRoute(method, u.pathname, this.basePath);
    if (!route || route.family === "operations") return;
    const seen = this.statuses.get(route.operationId) ?? new Set();
    seen.add(String(status));
    this.statuses.set(route.operationId, seen);
    const q = this.queries.get(route.operationId) ?? new Set();
    // A deepObject parameter is sent as `name[key]=...`.
    for (const k of u.searchParams.keys()) q.add(k.replace(/\[.*$/, ""));
    this.queries.set(route.operationId, q);
  }

  /** A JSON message (SSE event name, WebSocket `type`) received. */
  message(transport: Transport, name: string): void {
    const m = this.specs.find((s) => s.transport === transport && s.name === name && s.binaryType === undefined);
    if (m) this.messages.add(m.id);
  }

  /** A binary WebSocket frame of this type received. */
  binary(frameType: number): void {
    const m = this.specs.find((s) => s.transport === "ws" && s.binaryType === frameType);
    if (m) this.messages.add(m.id);
  }

  /** Whether an operation was called at all. */
  called(operationId: string): boolean {
    return this.statuses.has(operationId);
  }

  /**
   * The index. `why` names the reason for anything not reached (the runner knows what was not
   * served, declared unsupported or skipped); its answer is used as is, else `never reached`.
   */
  index(why: (what: { kind: CoverageKind; operation?: RouteSpec; message?: string; transport?: Transport }) => string | undefined): CoverageIndex {
    const count = (items: Array<{ id: string; reached: boolean; why: () => string | undefined }>): CoverageCount => ({
      reached: items.filter((i) => i.reached).length,
      total: items.length,
      unreached: items.filter((i) => !i.reached).map((i) => ({ id: i.id, why: i.why() ?? "never reached" })),
    });
    const operations = count(
      CONTRACT_ROUTES.map((r) => ({ id: opId(r), reached: this.called(r.operationId), why: () => why({ kind: "operations", operation: r }) })),
    );
    const statuses = count(
      CONTRACT_ROUTES.flatMap((r) =>
        Object.keys(r.responses)
          .filter((s) => /^\d{3}$/.test(s))
          .map((s) => ({
            id: `${r.operationId} ${s}`,
            reached: !!this.statuses.get(r.operationId)?.has(s),
            why: () => (this.called(r.operationId) ? statusWhy(s) : `${r.operationId} not called`),
          })),
      ),
    );
    const queryParameters = count(
      CONTRACT_ROUTES.flatMap((r) =>
        queryParametersOf(r).map((p) => ({
          id: `${r.operationId} ?${p}`,
          reached: !!this.queries.get(r.operationId)?.has(p),
          why: () => (this.called(r.operationId) ? undefined : `${r.operationId} not called`),
        })),
      ),
    );
    const messages = count(
      this.specs.map((m) => ({ id: m.id, reached: this.messages.has(m.id), why: () => why({ kind: "messages", message: m.name, transport: m.transport }) })),
    );
    return { operations, statuses, messages, queryParameters };
  }
}

/** Why a documented status of a called operation may rightly not come back. */
function statusWhy(status: string): string | undefined {
  if (status === "500") return "never reached (a correct server answers it only on an internal fault)";
  if (status === "503" || status === "507") return "never reached (only when the server is overloaded or out of storage)";
  return undefined;
}

/** `operations 31/31 · statuses 90/150 · ...`, for one line of a report. */
export function coverageLine(c: CoverageIndex): string {
  const label: Record<CoverageKind, string> = { operations: "operations", statuses: "statuses", messages: "messages", queryParameters: "query parameters" };
  return COVERAGE_KINDS.map((k) => `${label[k]} ${c[k].reached}/${c[k].total}`).join(", ");
}
