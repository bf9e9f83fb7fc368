// What every handler receives besides its validated input.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Caller } from "../domain/caller.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { FinishedJobViews } from "./v2/finished-job-views.ts";
import type { LinkContext } from "./views.ts";

/** Transport and caller of one request. */
export interface HandlerContext {
  request: FastifyRequest;
  reply: FastifyReply;
  caller: Caller;
  /** The runtime as the HTTP layer sees it: the services and narrow ports, no store, no dispatcher. */
  runtime: Runtime;
  /** Rendered views of finished jobs, for repeated GETs (the HTTP layer's cache). */
  views: FinishedJobViews;
  /** Builds link contexts for views (mount prefix, origin, signing). */
  links(): LinkContext;
}

/** A handler's answer; `undefined` means the handler wrote the reply itself (streams, bytes). */
export type HandlerResult = { status: number; body?: unknown; headers?: Record<string, string> } | undefined;
