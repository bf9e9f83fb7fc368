// HTTP request metrics: each route gets its own onResponse hook that knows its method and
// template, and keeps one histogram child per status, so a response costs a map lookup and an
// observe (no label object, no URL parsing). Unmatched URLs share one label.
import type { FastifyInstance, FastifyReply, onResponseHookHandler } from "fastify";
import type { FlowgateMetrics } from "../metrics/metrics.ts";

/** The route label of requests that matched no route. */
export const UNMATCHED_ROUTE = "(unmatched)";

/**
 * Route config that names the label of routes sharing one: a route per built file (hashed names,
 * new ones on every build) would make the label's values grow without bound.
 */
export interface MetricsRouteConfig {
  metricsRoute?: string;
}

type Observer = (reply: FastifyReply) => void;

/** An observer for one method and route template. */
function observerFor(metrics: FlowgateMetrics, method: string, route: string): Observer {
  const byStatus = new Map<number, { observe(value: number): void }>();
  return (reply) => {
    let child = byStatus.get(reply.statusCode);
    if (!child) byStatus.set(reply.statusCode, (child = metrics.httpDuration.labels(method, route, String(reply.statusCode))));
    child.observe(reply.elapsedTime / 1000);
  };
}

/**
 * Measures every route registered after this call; returns the observer of unmatched requests
 * (for the not-found handler, which route hooks do not reach).
 */
export function measureHttp(app: FastifyInstance, metrics: FlowgateMetrics): Observer {
  app.addHook("onRoute", (route) => {
    const template = (route.config as MetricsRouteConfig | undefined)?.metricsRoute ?? route.url ?? route.path;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    // A route of several methods (GET and HEAD) is labelled by the method of each request.
    const observers = new Map(methods.map((m) => [m, observerFor(metrics, m, template)]));
    const only = methods.length === 1 ? observers.get(methods[0]!)! : null;
    const hook: onResponseHookHandler = (request, reply, done) => {
      (only ?? observers.get(request.method) ?? observers.get(methods[0]!)!)(reply);
      done();
    };
    const existing = route.onResponse;
    route.onResponse = existing === undefined ? [hook] : Array.isArray(existing) ? [...existing, hook] : [existing, hook];
  });
  const unmatched = new Map<string, Observer>();
  return (reply) => {
    const method = reply.request.method;
    let observe = unmatched.get(method);
    if (!observe) {
      // Methods outside HTTP's own are one label too: a client picks them freely.
      const label = /^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)$/.test(method) ? method : "OTHER";
      unmatched.set(method, (observe = unmatched.get(label) ?? observerFor(metrics, label, UNMATCHED_ROUTE)));
    }
    observe(reply);
  };
}
