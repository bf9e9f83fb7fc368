// Liveness and readiness probes.
import type { OperationResult, OperationsHandlers } from "../../generated/handlers.ts";
import type { HandlerContext } from "./handler-context.ts";

/** GET /healthz and GET /readyz. */
export const operationsHandlers: OperationsHandlers<HandlerContext> = {
  getHealth: (): OperationResult<"getHealth"> => ({ status: 200, body: { status: "ok" } }),
  async getReadiness(_input, ctx): Promise<OperationResult<"getReadiness">> {
    const { runtime } = ctx;
    const store = await runtime.store.check().then(() => true, () => false);
    const engine = await runtime.engine.ready().catch(() => false);
    const queue = runtime.dispatcher.queue.size < runtime.config.queueLimit;
    // False once the server is stopping: a load balancer should send new work elsewhere.
    const dispatch = !runtime.dispatcher.stopping;
    const ready = store && engine && queue && dispatch;
    return { status: ready ? 200 : 503, body: { status: ready ? "ready" : "not_ready", checks: { store, engine, queue, dispatch } } };
  },
};
