// GET /api/v2/jobs/{id}/events: checks, then hands the connection to the event streams.
import type { OperationInput, OperationResult } from "../../../generated/handlers.ts";
import type { HandlerContext } from "../handler-context.ts";
import type { EventStreams } from "./event-stream.ts";

/** The handler, bound to the server's open streams. */
export function streamJobEventsHandler(streams: EventStreams) {
  return async function streamJobEvents(input: OperationInput<"streamJobEvents">, ctx: HandlerContext): Promise<OperationResult<"streamJobEvents">> {
    const job = await ctx.runtime.jobs.owned(ctx.caller, input.params.id);
    // HEAD gets the stream's headers only: no stream is held open for a body never sent.
    if (ctx.request.method === "HEAD") return { status: 200, headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } };
    // Anonymous callers are all one owner: their streams count per client address instead.
    const counted = ctx.runtime.surface.isAnonymous(ctx.caller) ? `${ctx.caller.owner}@${ctx.request.ip}` : ctx.caller.owner;
    streams.admit(counted);
    ctx.reply.hijack();
    await streams.open(job, ctx.reply.raw, ctx.links(), counted);
    return undefined;
  };
}
