// The server skeleton: a route table from the spec and a handler interface with one method per operation.
import { BANNER, deref, operations, type Json, type JsonObject } from "./spec-files.ts";
import { planValidators, validatorNames } from "./validators.ts";

/** Which interface family a path belongs to. */
function family(path: string): "v2" | "hosted" | "operations" {
  if (path.startsWith("/api/v2/")) return "v2";
  if (path.startsWith("/api/") || path === "/ws") return "hosted";
  return "operations";
}

/** Source of generated/routes.ts. */
export function routesSource(doc: JsonObject, eventSchemas: Record<string, Json>): string {
  const plan = planValidators(doc, eventSchemas);
  const has = (name: string) => name in plan.strict || name in plan.params;
  const globalSecurity = (doc.security as Json[]) ?? [];
  const routes = operations(doc).map(({ method, path, op }) => {
    const id = op.operationId as string;
    const names = validatorNames(id);
    const body = deref<JsonObject | undefined>(doc, op.requestBody as Json);
    const responses: Record<string, unknown> = {};
    for (const [status, resp] of Object.entries((op.responses as JsonObject) ?? {})) {
      const r = deref<JsonObject>(doc, resp);
      responses[status] = {
        contentType: Object.keys((r.content as JsonObject | undefined) ?? {})[0] ?? null,
        validator: has(names.response(status)) ? names.response(status) : null,
        errorCodes: (r["x-error-codes"] as string[] | undefined) ?? [],
        retryAfter: Boolean((r.headers as JsonObject | undefined)?.["Retry-After"]),
      };
    }
    const security = ((op.security as Json[] | undefined) ?? globalSecurity).map((req) => Object.keys(req as JsonObject));
    return {
      operationId: id,
      method: method.toUpperCase(),
      path,
      url: path.replace(/\{([^}]+)\}/g, ":$1"),
      family: family(path),
      tags: op.tags ?? [],
      security,
      websocket: op["x-websocket"] === true,
      requestBody: body
        ? {
            required: body.required === true,
            contentTypes: Object.keys((body.content as JsonObject) ?? {}),
            validator: has(names.request) ? names.request : null,
          }
        : null,
      validators: {
        path: has(names.path) ? names.path : null,
        query: has(names.query) ? names.query : null,
        header: has(names.header) ? names.header : null,
      },
      responses,
    };
  });
  const ids = routes.map((r) => r.operationId);
  return `${BANNER}
/** Every operationId of spec/openapi.yaml. */
export type OperationId =
${ids.map((id) => `  | ${JSON.stringify(id)}`).join("\n")};

/** One declared response of an operation. */
export interface ResponseSpec {
  contentType: string | null;
  /** Export name in validators.js, for JSON bodies. */
  validator: string | null;
  /** Error codes this status may carry (v2 operations). */
  errorCodes: string[];
  retryAfter: boolean;
}

/** One operation of the spec, as the server mounts it. */
export interface RouteSpec {
  operationId: OperationId;
  method: "GET" | "PUT" | "POST" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS";
  /** Path as written in the spec, with {param} placeholders. */
  path: string;
  /** Path in router syntax, with :param placeholders. */
  url: string;
  family: "v2" | "hosted" | "operations";
  tags: string[];
  /** Alternative security requirements: an empty list means anonymous access is allowed. */
  security: string[][];
  websocket: boolean;
  requestBody: { required: boolean; contentTypes: string[]; validator: string | null } | null;
  /** Export names in param-validators.js (coercing). */
  validators: { path: string | null; query: string | null; header: string | null };
  responses: Record<string, ResponseSpec>;
}

/** The route table, in spec order. */
export const routes: readonly RouteSpec[] = ${JSON.stringify(routes, null, 2)};
`;
}

/** Source of generated/handlers.ts: the typed interfaces the server must implement. */
export function handlersSource(doc: JsonObject): string {
  const ops = operations(doc).map(({ op, path }) => ({ id: op.operationId as string, family: family(path) }));
  const iface = (name: string, doc: string, fam: string) => `/** ${doc} */
export interface ${name}<Ctx> {
${ops
  .filter((o) => o.family === fam)
  .map((o) => `  ${o.id}: OperationHandler<${JSON.stringify(o.id)}, Ctx>;`)
  .join("\n")}
}
`;
  return `${BANNER}
import type { operations } from "./openapi-types.ts";
import type { OperationId } from "./routes.ts";

type Get<T, K extends string> = T extends { [P in K]?: infer V } ? V : never;
type JsonBody<Op> = Get<Get<Op, "requestBody">, "content"> extends infer C
  ? C extends { "application/json": infer B }
    ? B
    : unknown
  : unknown;

/** What a handler receives for an operation, already validated against the spec. */
export interface OperationInput<K extends OperationId> {
  params: Get<Get<operations[K], "parameters">, "path">;
  query: Get<Get<operations[K], "parameters">, "query">;
  headers: Record<string, string | undefined>;
  body: JsonBody<operations[K]>;
}

type Responses<Op> = Op extends { responses: infer R } ? R : never;
type ContentOf<R> = R extends { content: infer C } ? C : never;

/** JSON bytes rendered from a value of type \`T\` (a cached answer, sent as it is). */
export type RenderedJson<T> = Uint8Array & { readonly renderedFrom: T };
/** A body that is not JSON: bytes, text or a stream. */
export type RawBody = Uint8Array | string | NodeJS.ReadableStream;

/** What a handler answers with one declared status \`S\` whose response is \`R\`. */
type ResultFor<R, S> = [ContentOf<R>] extends [never]
  ? { status: S; body?: undefined; headers?: Record<string, string> }
  : ContentOf<R> extends { "application/json": infer J }
    ? { status: S; body: J | RenderedJson<J>; headers?: Record<string, string> }
    : { status: S; body?: RawBody; headers?: Record<string, string> };

/**
 * What a handler of operation \`K\` returns: one of its declared statuses with that status's
 * body type, so a view that drops or misnames a field fails typecheck; \`undefined\` when the
 * handler wrote the reply itself (event streams, the WebSocket).
 */
export type OperationResult<K extends OperationId> =
  | { [S in keyof Responses<operations[K]>]: ResultFor<Responses<operations[K]>[S], S> }[keyof Responses<operations[K]>]
  | undefined;

/** One operation's handler; \`Ctx\` carries the transport (request, reply, caller). */
export type OperationHandler<K extends OperationId, Ctx> = (input: OperationInput<K>, ctx: Ctx) => OperationResult<K> | Promise<OperationResult<K>>;

${iface("V2Handlers", "The v2 job interface: one method per operationId, so an added operation fails typecheck until handled.", "v2")}
${iface("HostedHandlers", "The hosted compatibility interface: one method per operationId.", "hosted")}
${iface("OperationsHandlers", "Liveness and readiness probes.", "operations")}
/** Every operation of the spec. */
export type Handlers<Ctx> = V2Handlers<Ctx> & HostedHandlers<Ctx> & OperationsHandlers<Ctx>;
`;
}
