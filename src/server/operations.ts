// Liveness and readiness probes, and the Prometheus metrics.
import type { OperationResult, OperationsHandlers } from "../../generated/handlers.ts";
import { bearerToken } from "./auth.ts";
import type { HandlerContext } from "./handler-context.ts";

/** GET /healthz, GET /readyz and GET /metrics. */
export const operationsHandlers: OperationsHandlers<HandlerContext> = {
  getHealth: (): OperationResult<"getHealth"> => ({ status: 200, body: { status: "ok" } }),
  async getReadiness(_input, ctx): Promise<OperationResult<"getReadiness">> {
    const { runtime } = ctx;
    const store = await runtime.store.check().then(() => true, () => false);
    const engine = await runtime.engine.ready().catch(() => false);
    const queue = runtime.dispatcher.queue.size < runtime.config.queueLimit;
    // False once the server is stopping (a load balancer should send new work elsewhere), and
    // while a store write of the dispatcher fails and is retried.
    const dispatch = !runtime.dispatcher.stopping && !runtime.dispatcher.failing;
    // False while the data directory is short of space (new data is refused, dispatch waits).
    const storage = !runtime.space.short;
    const ready = store && engine && queue && dispatch && storage;
    return { status: ready ? 200 : 503, body: { status: ready ? "ready" : "not_ready", checks: { store, engine, queue, dispatch, storage } } };
  },
  async getMetrics(_input, ctx): Promise<OperationResult<"getMetrics">> {
    const { runtime } = ctx;
    runtime.surface.assertMetricsAccess(bearerToken(ctx.request));
    return { status: 200, headers: { "content-type": runtime.metrics.contentType }, body: await runtime.metrics.render() };
  },
};
