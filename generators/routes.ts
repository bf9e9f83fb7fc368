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
      const retryAfter = deref<JsonObject | undefined>(doc, (r.headers as JsonObject | undefined)?.["Retry-After"] as Json);
      responses[status] = {
        contentType: Object.keys((r.content as JsonObject | undefined) ?? {})[0] ?? null,
        validator: has(names.response(status)) ? names.response(status) : null,
        errorCodes: (r["x-error-codes"] as string[] | undefined) ?? [],
        retryAfter: retryAfter?.required === true,
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
  /** Every answer of this status carries Retry-After (the spec's header is required; an optional one, as on 500, is not counted). */
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

/** Source of generated/handlers.ts: the typed interfaces the server must implement (their type helpers are generators/runtime/operation-types.ts). */
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
import type { OperationHandler } from "../generators/runtime/operation-types.ts";

export type { OperationHandler, OperationInput, OperationResult, RawBody, RenderedJson } from "../generators/runtime/operation-types.ts";

${iface("V2Handlers", "The v2 job interface: one method per operationId, so an added operation fails typecheck until handled.", "v2")}
${iface("HostedHandlers", "The hosted compatibility interface: one method per operationId.", "hosted")}
${iface("OperationsHandlers", "Liveness and readiness probes.", "operations")}
/** Every operation of the spec. */
export type Handlers<Ctx> = V2Handlers<Ctx> & HostedHandlers<Ctx> & OperationsHandlers<Ctx>;
`;
}
