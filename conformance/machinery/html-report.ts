// The certification-style report: one self-contained HTML file (no script, no outside resource)
// with the summary, the coverage index, and every rule of the contract with its result; a failure
// shows the exchange that proves it. Secrets are redacted from the report before any format is
// written (`redactReport`).
import { RULES } from "../rules.ts";
import type { CheckResult, Report } from "../types.ts";
import { COVERAGE_KINDS, coverageLine } from "./coverage.ts";
import { leftBehind } from "./report.ts";

const REDACTED = "[redacted]";

/** The report with every occurrence of the given secrets (API keys, extra_data values) replaced. */
export function redactReport(r: Report, secrets: Iterable<string>): Report {
  const list = [...secrets].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  if (list.length === 0) return r;
  const clean = (s: string | undefined) => (s === undefined ? s : list.reduce((acc, k) => acc.split(k).join(REDACTED), s));
  return {
    ...r,
    results: r.results.map((x) => ({
      ...x,
      title: clean(x.title)!,
      reason: clean(x.reason),
      failures: x.failures.map((f) => ({ ...f, message: clean(f.message)!, request: clean(f.request), excerpt: clean(f.excerpt) })),
    })),
  };
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

const LABEL: Record<CheckResult["status"] | "not run", string> = {
  passed: "passed",
  failed: "failed",
  skipped: "skipped",
  unsupported: "not supported (declared)",
  "not run": "not run",
};

/** The worst status of a rule's results: failed, then passed, then skipped, then unsupported. */
function ruleStatus(rs: readonly CheckResult[]): CheckResult["status"] | "not run" {
  for (const s of ["failed", "passed", "skipped", "unsupported"] as const) if (rs.some((x) => x.status === s)) return s;
  return "not run";
}

function resultHtml(x: CheckResult): string {
  const head = `<li class="${x.status}"><span class="st">${esc(LABEL[x.status])}</span> ${esc(x.title)}`;
  if (x.status === "skipped" || x.status === "unsupported") return `${head}<div class="why">${esc(x.reason ?? "")}</div></li>`;
  if (x.status !== "failed") return `${head}</li>`;
  const details = x.failures
    .map(
      (f) =>
        `<div class="failure"><b>[${esc(f.rule)}]</b> ${esc(f.message)}${f.request ? `<pre>request: ${esc(f.request)}</pre>` : ""}${
          f.excerpt ? `<pre>response: ${esc(f.excerpt)}</pre>` : ""
        }</div>`,
    )
    .join("");
  return `${head}<details open><summary>the exchange that shows it</summary>${details}</details></li>`;
}

/** The report as one self-contained HTML page. */
export function toHtml(r: Report): string {
  const byRule = new Map<string, CheckResult[]>();
  for (const x of r.results) byRule.set(x.rule, [...(byRule.get(x.rule) ?? []), x]);
  const verdict = r.ok ? "PASS" : "FAIL";
  const totals = `${r.totals.passed} passed, ${r.totals.failed} failed, ${r.totals.skipped} skipped, ${r.totals.unsupported} not supported (declared)`;
  const groups = r.groups
    .map(
      (g) => `<tr><td>${esc(g.group)}</td><td>${esc(g.title)}</td><td>${g.passed}</td><td>${g.failed}</td><td>${g.skipped}</td><td>${g.unsupported}</td></tr>`,
    )
    .join("");
  const coverage = r.coverage
    ? `<h2>Coverage</h2><p>${esc(coverageLine(r.coverage))}</p>${COVERAGE_KINDS.map((k) =>
        r.coverage![k].unreached.length
          ? `<details><summary>${esc(k)}: ${r.coverage![k].unreached.length} not reached</summary><ul>${r
              .coverage![k].unreached.map((u) => `<li>${esc(u.id)}: ${esc(u.why)}</li>`)
              .join("")}</ul></details>`
          : "",
      ).join("")}`
    : "";
  const rules = RULES.map((rule) => {
    const rs = byRule.get(rule.id) ?? [];
    const st = ruleStatus(rs);
    return `<section class="rule ${st === "not run" ? "notrun" : st}"><h3><span class="st">${esc(LABEL[st])}</span> ${esc(rule.id)}</h3><p class="text">${esc(
      rule.text,
    )}</p><ul>${rs.map(resultHtml).join("")}</ul></section>`;
  }).join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>flowgate conformance: ${esc(verdict)} ${esc(r.baseUrl)}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}
h1 .PASS{color:#176f2c}h1 .FAIL{color:#b3261e}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
.st{display:inline-block;min-width:11em;font-weight:600}.passed>.st,.passed .st{color:#176f2c}.failed>.st,.failed .st{color:#b3261e}
.skipped .st{color:#8a6d00}.unsupported .st{color:#555}.notrun .st{color:#999}.text{color:#555;margin:.2em 0}
.why{color:#666;margin-left:11em}pre{white-space:pre-wrap;word-break:break-all;background:#f6f6f6;padding:4px;margin:2px 0}
section.rule{border-top:1px solid #eee;padding:.3em 0}section.rule h3{margin:.3em 0;font-size:1em}ul{margin:.2em 0}
</style></head><body>
<h1><span class="${verdict}">${verdict}</span> flowgate conformance</h1>
<p>${esc(r.baseUrl)} (${esc(r.surface)}${r.static ? ", static subset" : ""}${r.hosted ? ", hosted interface on" : ""}), started ${esc(r.startedAt)}, ${(r.durationMs / 1000).toFixed(1)} s</p>
<p>${esc(totals)}${r.unsupported.length ? `; declared not supported: ${esc(r.unsupported.join(", "))}` : ""}${r.failedRules.length ? `; failed rules: ${esc(r.failedRules.join(", "))}` : ""}</p>
<p>${esc(leftBehind(r))}</p>
<table><tr><th>group</th><th></th><th>passed</th><th>failed</th><th>skipped</th><th>not supported</th></tr>${groups}</table>
${coverage}
<h2>Rules</h2>
${rules}
</body></html>
`;
}
