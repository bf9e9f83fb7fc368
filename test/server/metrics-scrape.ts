// Reading GET /metrics in tests: a scrape parsed by a real Prometheus text parser, and one sample of it.
import parsePrometheusTextFormat, { type PromFamily } from "parse-prometheus-text-format";
import { expect } from "vitest";
import type { TestServer } from "./helpers.ts";

/**
 * The scrape's families by name, with their declared types; and each histogram's `_bucket`,
 * `_count` and `_sum` series as families of their own: the parser folds a labelled histogram
 * into one unlabelled series, so it reads them a second time declared untyped.
 */
export async function scrape(server: TestServer, token?: string): Promise<Map<string, PromFamily>> {
  const res = await server.api.get("/metrics", token ? { token } : {});
  expect(res.status, res.text).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const families = new Map(parsePrometheusTextFormat(res.text).map((f) => [f.name, f]));
  const histograms = [...families.values()].filter((f) => f.type === "HISTOGRAM").map((f) => f.name);
  const untyped = res.text.replace(/^# TYPE (\S+) histogram$/gm, "# TYPE $1 untyped");
  for (const f of parsePrometheusTextFormat(untyped)) {
    if (!histograms.some((h) => f.name.startsWith(`${h}_`))) continue;
    // Series of one labelled histogram interleave (buckets, sum, count per label set).
    const seen = families.get(f.name);
    if (seen) seen.metrics.push(...f.metrics);
    else families.set(f.name, f);
  }
  return families;
}

export function sample(families: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}) {
  const family = families.get(name);
  expect(family, `family ${name}`).toBeDefined();
  return family!.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}
