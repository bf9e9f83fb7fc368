// The operator's kit in deploy/: every metric the Grafana dashboard and the Prometheus alerting
// rules name is one a real server exposes on /metrics, and the rules (and the dashboard's
// queries, as recording rules) pass `promtool check rules` where promtool is installed
// (Debian's `prometheus` package).
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { startTestServer, type TestServer } from "./helpers.ts";

const ROOT = new URL("../../", import.meta.url);
const PROMTOOL = spawnSync("promtool", ["--version"], { encoding: "utf8" }).status === 0;

interface Dashboard {
  panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
  templating: { list: Array<{ query?: unknown }> };
}

async function dashboard(): Promise<Dashboard> {
  return JSON.parse(await readFile(new URL("deploy/grafana/flowgate.json", ROOT), "utf8")) as Dashboard;
}

async function rules(): Promise<{ groups: Array<{ rules: Array<{ alert: string; expr: string }> }> }> {
  return parse(await readFile(new URL("deploy/prometheus/alerts.yml", ROOT), "utf8"));
}

/** The PromQL of the dashboard: every panel's targets and the variables' queries. */
async function dashboardQueries(): Promise<string[]> {
  const d = await dashboard();
  const targets = d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  const variables = d.templating.list.map((v) => v.query).filter((q): q is string => typeof q === "string" && q.includes("flowgate_"));
  return [...targets, ...variables];
}

/** The flowgate metric names an expression reads. */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b(flowgate_[a-z0-9_]+)\b/g)].map((m) => m[1]!);
}

/** The series names a scrape can hold: each family, and a histogram's _bucket, _count and _sum. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === "histogram" || type === "summary") for (const suffix of ["_bucket", "_count", "_sum"]) names.add(name! + suffix);
  }
  return names;
}

let server: TestServer;
let dir: string;
beforeAll(async () => {
  server = await startTestServer();
  dir = await mkdtemp(join(tmpdir(), "flowgate-kit-"));
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("deploy/: the Grafana dashboard and the Prometheus rules", () => {
  it("name only metrics a live server exposes on /metrics", async () => {
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    const exposed = exposedNames(await res.text());
    const queries = [...(await dashboardQueries()), ...(await rules()).groups.flatMap((g) => g.rules.map((r) => r.expr))];
    const named = new Set(queries.flatMap(metricNames));
    // The kit reads what the issue asks for: queue depth and age, failures by code, execution
    // time, readiness and storage, HTTP latency, busy workers, build info.
    for (const needed of [
      "flowgate_queue_depth",
      "flowgate_queue_oldest_seconds",
      "flowgate_job_failures_total",
      "flowgate_job_execution_seconds_bucket",
      "flowgate_ready",
      "flowgate_readiness_check",
      "flowgate_storage_short",
      "flowgate_storage_free_bytes",
      "flowgate_http_request_duration_seconds_bucket",
      "flowgate_workers_busy",
      "flowgate_build_info",
    ]) {
      expect(named, needed).toContain(needed);
    }
    expect([...named].filter((name) => !exposed.has(name))).toEqual([]);
  });

  it("every dashboard panel has a query, and HTTP latency leaves the event streams out", async () => {
    const d = await dashboard();
    for (const p of d.panels.filter((p) => (p as { type?: string }).type !== "row")) expect(p.targets?.length, p.title).toBeGreaterThan(0);
    const http = d.panels.find((p) => /HTTP p99/.test(p.title))!;
    expect(http.targets![0]!.expr).toContain('route!~".*/events');
  });

  it.skipIf(!PROMTOOL)("pass promtool check rules: the alerting rules, and the dashboard's queries as recording rules", async () => {
    const alerts = spawnSync("promtool", ["check", "rules", new URL("deploy/prometheus/alerts.yml", ROOT).pathname], { encoding: "utf8" });
    expect(alerts.status, alerts.stdout + alerts.stderr).toBe(0);
    // Grafana's variables become what they stand for, so promtool parses the PromQL itself.
    const concrete = (q: string) => q.replaceAll("$__rate_interval", "5m").replaceAll("$job", "flowgate").replaceAll("$instance", ".*");
    const queries = (await dashboardQueries()).filter((q) => !q.startsWith("label_values"));
    const file = join(dir, "dashboard-queries.yml");
    await writeFile(
      file,
      stringify({ groups: [{ name: "dashboard", rules: queries.map((q, i) => ({ record: `flowgate:dashboard_query_${i}`, expr: concrete(q) })) }] }),
    );
    const check = spawnSync("promtool", ["check", "rules", file], { encoding: "utf8" });
    expect(check.status, check.stdout + check.stderr).toBe(0);
  });

  it.runIf(!PROMTOOL)("skips promtool check rules: promtool is not installed (Debian package prometheus)", () => undefined);
});
