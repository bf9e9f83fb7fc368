// Liveness and readiness probes, and the Prometheus metrics.
import type { OperationResult, OperationsHandlers } from "../../generated/handlers.ts";
import { bearerToken } from "./auth.ts";
import type { HandlerContext } from "./handler-context.ts";

/** GET /healthz, GET /readyz and GET /metrics. */
export const operationsHandlers: OperationsHandlers<HandlerContext> = {
  getHealth: (): OperationResult<"getHealth"> => ({ status: 200, body: { status: "ok" } }),
  async getReadiness(_input, ctx): Promise<OperationResult<"getReadiness">> {
    const checks = await ctx.runtime.readiness();
    const ready = Object.values(checks).every(Boolean);
    return { status: ready ? 200 : 503, body: { status: ready ? "ready" : "not_ready", checks } };
  },
  async getMetrics(_input, ctx): Promise<OperationResult<"getMetrics">> {
    const { runtime } = ctx;
    runtime.surface.assertMetricsAccess(bearerToken(ctx.request));
    return { status: 200, headers: { "content-type": runtime.metrics.contentType }, body: await runtime.metrics.render() };
  },
};
