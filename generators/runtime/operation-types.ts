// Type helpers of the server skeleton: what a handler of an operation receives and returns, read
// from the generated OpenAPI types. generated/handlers.ts imports them (and re-exports the public
// ones); they live here, checked by tsc as they are written, rather than as text in a generator.
import type { operations } from "../../generated/openapi-types.ts";
import type { OperationId } from "../../generated/routes.ts";

type Get<T, K extends string> = T extends { [P in K]?: infer V } ? V : never;
type JsonBody<Op> = Get<Get<Op, "requestBody">, "content"> extends infer C ? (C extends { "application/json": infer B } ? B : unknown) : unknown;

/** What a handler receives for an operation, already validated against the spec. */
export interface OperationInput<K extends OperationId> {
  params: Get<Get<operations[K], "parameters">, "path">;
  query: Get<Get<operations[K], "parameters">, "query">;
  headers: Record<string, string | undefined>;
  body: JsonBody<operations[K]>;
}

type Responses<Op> = Op extends { responses: infer R } ? R : never;
type ContentOf<R> = R extends { content: infer C } ? C : never;

/** JSON bytes rendered from a value of type `T` (a cached answer, sent as it is). */
export type RenderedJson<T> = Uint8Array & { readonly renderedFrom: T };
/** A body that is not JSON: bytes, text or a stream. */
export type RawBody = Uint8Array | string | NodeJS.ReadableStream;

/** What a handler answers with one declared status `S` whose response is `R`. */
type ResultFor<R, S> = [ContentOf<R>] extends [never]
  ? { status: S; body?: undefined; headers?: Record<string, string> }
  : ContentOf<R> extends { "application/json": infer J }
    ? { status: S; body: J | RenderedJson<J>; headers?: Record<string, string> }
    : { status: S; body?: RawBody; headers?: Record<string, string> };

/**
 * What a handler of operation `K` returns: one of its declared statuses with that status's
 * body type, so a view that drops or misnames a field fails typecheck; `undefined` when the
 * handler wrote the reply itself (event streams, the WebSocket).
 */
export type OperationResult<K extends OperationId> =
  | { [S in keyof Responses<operations[K]>]: ResultFor<Responses<operations[K]>[S], S> }[keyof Responses<operations[K]>]
  | undefined;

/** One operation's handler; `Ctx` carries the transport (request, reply, caller). */
export type OperationHandler<K extends OperationId, Ctx> = (input: OperationInput<K>, ctx: Ctx) => OperationResult<K> | Promise<OperationResult<K>>;
