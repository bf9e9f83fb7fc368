// Typed bodies of the answers this client reads itself (followed links, multipart uploads, SSE
// frames), keyed by the spec's generated operation and event types: the type of a body comes
// from its operation or event name, never from a cast at the call site.
import type { SseEvent } from "../../generated/asyncapi-types.ts";
import type { operations } from "../../generated/openapi-types.ts";

type Responses<K extends keyof operations> = operations[K]["responses"];
type JsonOf<R> = R extends { content: { "application/json": infer B } } ? B : never;

/** The JSON body of any 2xx answer operation `K` declares. */
export type SuccessBody<K extends keyof operations> = {
  [S in keyof Responses<K>]: `${S & (string | number)}` extends `2${string}` ? JsonOf<Responses<K>[S]> : never;
}[keyof Responses<K>];

/** The payload of the SSE event named `E`, as spec/asyncapi.yaml declares it. */
export type SsePayload<E extends SseEvent["event"]> = Extract<SseEvent, { event: E }>["data"];

/**
 * The body of a 2xx answer of operation `K` (the caller checked the status). Like the generated
 * client's, it is the server's word: the contract types it, nothing validates it here.
 */
export async function successBody<K extends keyof operations>(res: Response, _operation: K): Promise<SuccessBody<K>> {
  return res.json();
}

/** The JSON data of an SSE event as its declared payload, or null when it is not JSON (the message is skipped). */
export function ssePayload<E extends SseEvent["event"]>(_event: E, data: string): SsePayload<E> | null {
  try {
    return JSON.parse(data);
  } catch {
    return null;
  }
}
