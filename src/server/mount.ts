// Mounts the generated route table on Fastify: parameters and bodies are validated with the
// generated validators, the caller is authenticated, and the handler named by the operationId
// runs. Handlers stay thin; errors all go through the envelope.
import { failureLogOf } from "./failure-log.ts";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ValidateFunction } from "ajv";
import { routes, type RouteSpec } from "../../generated/routes.ts";
import * as bodyValidators from "../../generated/validators.js";
import * as paramValidators from "../../generated/param-validators.js";
import type { HostedHandlers, OperationsHandlers, V2Handlers } from "../../generated/handlers.ts";
import type { Caller } from "../domain/caller.ts";
import { ServiceError } from "../domain/errors.ts";
import { bearerToken } from "./auth.ts";
import { toHostedError } from "./hosted/hosted-errors.ts";
import type { HandlerContext, HandlerResult } from "./handler-context.ts";
import { assertShallow, assertValid, type OwnCodeField } from "./request-validation.ts";
import { malformedJson, unsupportedContentType } from "./error-envelope.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { linkExpiry, type LinkContext } from "./views.ts";

type AnyHandler = (input: never, ctx: HandlerContext) => unknown;

declare module "fastify" {
  interface FastifyContextConfig {
    /** The interface family of the route: its errors answer in that family's shape. */
    family?: "v2" | "hosted" | "operations";
  }
}

const strict = bodyValidators as unknown as Record<string, ValidateFunction>;
const coercing = paramValidators as unknown as Record<string, ValidateFunction>;
/** Callers authenticated by a route's onRequest hook. */
const callers = new WeakMap<FastifyRequest, Caller>();

/** The handlers this server implements, by interface family. */
export interface MountedHandlers {
  v2: V2Handlers<HandlerContext>;
  operations?: OperationsHandlers<HandlerContext>;
  hosted?: HostedHandlers<HandlerContext>;
}

/** Request origin (scheme and authority) as the client reached us. */
export function requestOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/**
 * Mounts every route of the families given, under `prefix`: "" or the serverless gateway mount
 * `/deployment/:deployment_id`, whose value becomes the prefix of every host-relative link.
 */
export function mountRoutes(app: FastifyInstance, runtime: Runtime, handlers: MountedHandlers, prefix = ""): void {
  const table = { ...handlers.v2, ...handlers.operations, ...handlers.hosted } as unknown as Record<string, AnyHandler>;
  for (const route of routes) {
    const handler = table[route.operationId];
    if (!handler) continue;
    const serve = async (request: FastifyRequest, reply: FastifyReply) => {
      const caller = callers.get(request) ?? (await authenticate(route, request, runtime));
      const input = validateInput(route, request);
      const mount = prefix.replace(":deployment_id", String((request.params as Record<string, unknown>).deployment_id ?? ""));
      const ctx: HandlerContext = { request, reply, caller, runtime, views: app.finishedViews, links: () => linkContext(request, runtime, mount, caller) };
      const result = (await handler(input as never, ctx)) as HandlerResult;
      return send(reply, result);
    };
    // The hosted interface answers errors in ComfyUI's shape; everything else uses the envelope.
    const routeHandler =
      route.family !== "hosted"
        ? serve
        : async (request: FastifyRequest, reply: FastifyReply) => {
            try {
              return await serve(request, reply);
            } catch (err) {
              if (reply.sent) throw err;
              const e = toHostedError(err);
              if (e.status >= 500) failureLogOf(runtime).note(request.log, err);
              return reply.code(e.status).headers(e.headers).send(e.body);
            }
          };
    // ComfyUI serves its routes both bare and under /api; so does the hosted interface, so that
    // ComfyUI-native clients (and flowgate's own ComfyUI backend) can talk to it unchanged.
    const urls = route.family === "hosted" && route.url.startsWith("/api/") ? [route.url, route.url.slice(4)] : [route.url];
    // Credentials are checked on arrival, before a body is read or parsed (so a caller without
    // them learns that, not what is wrong with its body); a route without a body checks them
    // first thing in its handler (one hook stage fewer on the hot GETs).
    const onRequest = async (request: FastifyRequest) => void callers.set(request, await authenticate(route, request, runtime));
    const early = route.family !== "operations" && route.requestBody !== null;
    for (const url of urls) {
      app.route({ method: route.method, url: prefix + url, handler: routeHandler, config: { family: route.family }, ...(early ? { onRequest } : {}) });
    }
  }
}

/**
 * The caller, by the credentials the route's `security` (from the spec) accepts: none for a
 * route that only allows anonymous access, the hosted key (`X-API-Key` for `apiKeyHeader`,
 * `?token=` for `apiKeyQuery`), a signed link where `signedUrl` is allowed and the query
 * carries one, a bearer token for `bearerAuth`, no account for `operatorToken`. Whether a missing credential is acceptable is
 * the surface's policy.
 */
async function authenticate(route: RouteSpec, request: FastifyRequest, runtime: Runtime): Promise<Caller> {
  const schemes = schemesOf(route);
  if (schemes.size === 0) return { owner: "" };
  if (schemes.has("apiKeyHeader") || schemes.has("apiKeyQuery")) {
    const header = schemes.has("apiKeyHeader") ? request.headers["x-api-key"] : undefined;
    const query = schemes.has("apiKeyQuery") ? (request.query as Record<string, unknown>)?.token : undefined;
    // As on the socket's upgrade: the query parameter wins when both are given.
    const key = typeof query === "string" ? query : typeof header === "string" ? header : null;
    const caller = await runtime.surface.hostedCaller(key);
    if (!caller.subscription_active) throw new ServiceError("forbidden", "Your subscription is not active.", { inactive_subscription: true });
    return caller;
  }
  const deploymentId = deploymentOf(request, runtime);
  // A signed link carries its own authorization; the handler checks the signature.
  if (schemes.has("signedUrl") && typeof (request.query as Record<string, unknown>)?.signature === "string") {
    return { owner: "", deployment_id: deploymentId };
  }
  if (schemes.has("bearerAuth")) return runtime.surface.v2Caller(bearerToken(request), deploymentId);
  // The operator token is no account's: the handler checks it against the surface's policy.
  if (schemes.has("operatorToken")) return { owner: "" };
  throw new Error(`${route.operationId}: no credential of its security schemes is supported here`);
}

const routeSchemes = new WeakMap<RouteSpec, ReadonlySet<string>>();

/** The security schemes a route accepts, computed once per route (authenticate runs per request). */
function schemesOf(route: RouteSpec): ReadonlySet<string> {
  let schemes = routeSchemes.get(route);
  if (schemes === undefined) routeSchemes.set(route, (schemes = new Set(route.security.flat())));
  return schemes;
}

/** The serverless deployment a request addresses: the gateway mount's id, or the Host's label. */
function deploymentOf(request: FastifyRequest, runtime: Runtime): string | null {
  const fromPath = (request.params as Record<string, unknown> | undefined)?.deployment_id;
  if (typeof fromPath === "string") return fromPath;
  const domain = runtime.config.serverlessDomain;
  if (!domain) return null;
  const host = request.hostname.toLowerCase();
  for (const suffix of [`.run.${domain}`, `.stg.run.${domain}`]) {
    if (host.endsWith(suffix)) {
      const label = host.slice(0, -suffix.length);
      if (/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(label)) return label;
    }
  }
  return null;
}

/** Fields whose failures carry their own code, by operation (the job labels). */
const OWN_CODES: Partial<Record<string, { body?: OwnCodeField; query?: OwnCodeField }>> = {
  createJob: { body: { field: "metadata", code: "metadata_invalid", message: "The metadata is invalid." } },
  listJobs: { query: { field: "metadata", code: "invalid_metadata_filter", message: "The metadata filter is invalid." } },
};

/**
 * Folds deepObject parameters (`metadata[key]=value`) into objects (`metadata: {key: value}`). A
 * key with other brackets (`metadata[a][b]`) keeps them, so that the schema's key rule refuses it.
 */
export function foldDeepObjects(query: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(query)) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\[(.*)$/s.exec(name);
    if (!m) {
      out[name] = value;
      continue;
    }
    const [, param, rest] = m as unknown as [string, string, string];
    const simple = /^[^[\]]*\]$/.test(rest);
    const key = simple ? rest.slice(0, -1) : `[${rest}`;
    const target = out[param];
    // `metadata=x` beside `metadata[k]=y`: kept as the string, which the schema refuses.
    if (target !== undefined && (typeof target !== "object" || target === null || Array.isArray(target))) continue;
    const obj = (target as Record<string, unknown> | undefined) ?? {};
    // A key given twice is an array (a repeated filter), refused as a value that is not a string.
    // Defined, not assigned: `metadata[__proto__]=x` is a key like any other, not the prototype.
    Object.defineProperty(obj, key, {
      value: Object.hasOwn(obj, key) ? [obj[key], value].flat() : value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
    out[param] = obj;
  }
  return out;
}

function validateInput(route: RouteSpec, request: FastifyRequest) {
  const params = { ...(request.params as Record<string, unknown>) };
  const own = OWN_CODES[route.operationId];
  const query = route.validators.query ? foldDeepObjects(request.query as Record<string, unknown>) : { ...(request.query as Record<string, unknown>) };
  // Node joins repeated headers into one string (set-cookie aside), so only a route that
  // validates its headers needs its own copy.
  const headers = (
    route.validators.header ? Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v])) : request.headers
  ) as Record<string, string | undefined>;
  if (route.validators.path) assertValid(coercing[route.validators.path]!, params);
  if (route.validators.query) assertValid(coercing[route.validators.query]!, query, "", own?.query);
  if (route.validators.header) assertValid(coercing[route.validators.header]!, headers);
  let body: unknown = request.body;
  if (route.requestBody && request.isMultipart?.() === true && !route.requestBody.contentTypes.includes("multipart/form-data")) {
    // A form sent to a JSON operation: on the hosted interface it is read as JSON, which a
    // multipart body never is (ComfyUI answers it 400 too).
    throw route.family === "hosted" ? malformedJson() : unsupportedContentType();
  }
  if (route.requestBody?.validator && request.isMultipart?.() !== true) {
    if (body === undefined || body === null) {
      if (route.requestBody.required) assertValid(strict[route.requestBody.validator]!, undefined);
      body = undefined;
    } else {
      assertShallow(body);
      assertValid(strict[route.requestBody.validator]!, body, "", own?.body);
    }
  }
  return { params, query, headers, body };
}

function linkContext(request: FastifyRequest, runtime: Runtime, mount: string, caller: Caller): LinkContext {
  return {
    logs: runtime.surface.showsLogs(caller),
    mount,
    origin: runtime.config.publicUrl ?? requestOrigin(request),
    signer: runtime.signer,
    expiresAt: () => linkExpiry(runtime.now(), runtime.config.urlTtlMs),
  };
}

function send(reply: FastifyReply, result: HandlerResult): FastifyReply | undefined {
  if (result === undefined) return reply.sent ? undefined : reply;
  if (result.headers) reply.headers(result.headers);
  reply.code(result.status);
  return result.body === undefined ? reply.send() : reply.send(result.body);
}
