// The report in three forms: a console table per rule group with every failure (rule ID,
// request, excerpt of the answer) and every skip reason; JSON; JUnit XML.
import type { CheckResult, Report } from "../types.ts";
import { COVERAGE_KINDS, coverageLine, type CoverageIndex } from "./coverage.ts";

const pad = (s: string | number, n: number) => String(s).padEnd(n);
const padStart = (s: string | number, n: number) => String(s).padStart(n);

/** The console report. */
export function formatConsole(r: Report): string {
  const lines: string[] = [];
  lines.push(`flowgate conformance: ${r.baseUrl} (${r.surface}${r.static ? ", static subset" : ""}${r.hosted ? ", hosted interface on" : ""})`);
  lines.push(leftBehind(r));
  lines.push("");
  // The column of declared unsupported rules appears only when the surface declared some.
  const un = r.totals.unsupported > 0;
  const col = (n: number) => (un ? ` ${padStart(n, 12)}` : "");
  lines.push(
    `${pad("group", 6)} ${pad("", 20)} ${padStart("passed", 7)} ${padStart("failed", 7)} ${padStart("skipped", 8)}${un ? ` ${padStart("unsupported", 12)}` : ""}`,
  );
  for (const g of r.groups)
    lines.push(`${pad(g.group, 6)} ${pad(g.title, 20)} ${padStart(g.passed, 7)} ${padStart(g.failed, 7)} ${padStart(g.skipped, 8)}${col(g.unsupported)}`);
  lines.push(
    `${pad("total", 27)} ${padStart(r.totals.passed, 7)} ${padStart(r.totals.failed, 7)} ${padStart(r.totals.skipped, 8)}${col(r.totals.unsupported)}`,
  );
  const failed = r.results.filter((x) => x.status === "failed");
  if (failed.length) {
    lines.push("", "Failures:");
    for (const x of failed) {
      lines.push(`  ✗ ${x.title}`);
      for (const f of x.failures) {
        lines.push(`      [${f.rule}] ${f.message}`);
        if (f.request) lines.push(`        request:  ${f.request}`);
        if (f.excerpt) lines.push(`        response: ${f.excerpt.replace(/\s*\n\s*/g, " ")}`);
      }
    }
  }
  const skipped = r.results.filter((x) => x.status === "skipped");
  if (skipped.length) {
    // A reason shared by several checks (an option not given, an interface not served) is said once.
    lines.push("", "Skipped:");
    const byReason = new Map<string, CheckResult[]>();
    for (const x of skipped) byReason.set(x.reason ?? "", [...(byReason.get(x.reason ?? "") ?? []), x]);
    for (const [reason, xs] of byReason) {
      if (xs.length === 1) lines.push(`  - ${xs[0]!.title}: ${reason}`);
      else lines.push(`  - ${reason}; ${xs.length} checks:`, ...xs.map((x) => `      ${x.title}`));
    }
  }
  if (un)
    lines.push(
      "",
      `Not supported (declared: ${r.unsupported.join(", ")}): ${r.totals.unsupported} rules and checks, neither run nor counted as failed or skipped`,
    );
  if (r.coverage) lines.push("", ...formatCoverage(r.coverage));
  const declared = un ? `, ${r.totals.unsupported} not supported (declared)` : "";
  lines.push(
    "",
    r.ok
      ? `PASS: ${r.totals.passed} passed, ${r.totals.skipped} skipped${declared}`
      : `FAIL: ${r.totals.failed} failed (${r.failedRules.join(", ")}), ${r.totals.passed} passed, ${r.totals.skipped} skipped${declared}`,
  );
  if (r.coverage) lines.push(`coverage: ${coverageLine(r.coverage)}`);
  return lines.join("\n");
}

/** What the run leaves in the server it checked: its labelled jobs, and what it canceled at the end. */
export function leftBehind(r: Report): string {
  const jobs = r.runLabel ? `its v2 jobs carry the label conformance-run=${r.runLabel}` : "the surface takes no labels, so its jobs carry none";
  return `left in the server: ${jobs}; ${r.canceledAtEnd} job${r.canceledAtEnd === 1 ? "" : "s"} still in flight at the end canceled`;
}

/** The coverage index in lines: the counts, then what was not reached, one line per kind and reason. */
export function formatCoverage(c: CoverageIndex): string[] {
  const lines = [`Coverage: ${coverageLine(c)}`];
  for (const k of COVERAGE_KINDS) {
    const byWhy = new Map<string, string[]>();
    for (const u of c[k].unreached) byWhy.set(u.why, [...(byWhy.get(u.why) ?? []), u.id]);
    for (const [why, ids] of byWhy) lines.push(`  not reached (${k}), ${why}: ${ids.join(", ")}`);
  }
  return lines;
}

/**
 * One line per finished check, for progress output. With `said` (each skip reason shown so far,
 * with the rule of the check that showed it), a reason already shown is not repeated.
 */
export function formatProgress(x: CheckResult, said?: Map<string, string>): string {
  const mark = x.status === "passed" ? "✓" : x.status === "failed" ? "✗" : x.status === "unsupported" ? "○" : "-";
  let skip = "";
  if (x.status === "skipped") {
    const first = said?.get(x.reason ?? "");
    skip = first ? ` (skipped: as ${first} above)` : ` (skipped: ${x.reason})`;
    if (!first) said?.set(x.reason ?? "", x.rule);
  }
  return `${mark} ${x.title}${skip}${x.status === "unsupported" ? " (not supported, declared)" : ""}${x.status === "failed" ? ` — ${x.failures[0]?.message ?? ""}` : ""}`;
}

/** The report as JSON. */
export function toJson(r: Report): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}

function xml(s: string): string {
  // Characters XML 1.0 cannot carry are dropped; the markup characters are escaped.
  return s
    .replace(/[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd]/gu, "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}

/** The report as JUnit XML: one testsuite per rule group, one testcase per check. */
export function toJUnit(r: Report): string {
  const out = [`<?xml version="1.0" encoding="UTF-8"?>`];
  out.push(
    `<testsuites name="flowgate conformance" tests="${r.results.length}" failures="${r.totals.failed}" skipped="${r.totals.skipped + r.totals.unsupported}" time="${(r.durationMs / 1000).toFixed(3)}">`,
  );
  for (const g of r.groups) {
    const rs = r.results.filter((x) => x.group === g.group);
    const time = rs.reduce((s, x) => s + x.durationMs, 0) / 1000;
    out.push(
      `  <testsuite name="${xml(`${g.group} ${g.title}`)}" tests="${rs.length}" failures="${g.failed}" skipped="${g.skipped + g.unsupported}" time="${time.toFixed(3)}">`,
    );
    for (const x of rs) {
      const open = `    <testcase classname="conformance.${xml(g.group)}" name="${xml(x.title)}" time="${(x.durationMs / 1000).toFixed(3)}"`;
      if (x.status === "passed") {
        out.push(`${open}/>`);
        continue;
      }
      out.push(`${open}>`);
      // JUnit has no "not supported": a declared rule is a skip whose message says so.
      if (x.status === "skipped" || x.status === "unsupported") out.push(`      <skipped message="${xml(x.reason ?? "")}"/>`);
      else {
        const body = x.failures
          .map((f) => [`[${f.rule}] ${f.message}`, f.request && `request: ${f.request}`, f.excerpt && `response: ${f.excerpt}`].filter(Boolean).join("\n"))
          .join("\n\n");
        out.push(`      <failure message="${xml(x.failures[0]?.message ?? "failed")}" type="${xml(x.failures[0]?.rule ?? x.rule)}">${xml(body)}</failure>`);
      }
      out.push("    </testcase>");
    }
    out.push("  </testsuite>");
  }
  if (r.coverage) {
    // The coverage index as properties of a suite of its own (no test cases), with what was not reached as its output.
    out.push(`  <testsuite name="coverage" tests="0" failures="0" skipped="0">`, "    <properties>");
    for (const k of COVERAGE_KINDS) out.push(`      <property name="coverage.${k}" value="${r.coverage[k].reached}/${r.coverage[k].total}"/>`);
    out.push("    </properties>", `    <system-out>${xml(formatCoverage(r.coverage).join("\n"))}</system-out>`, "  </testsuite>");
  }
  out.push("</testsuites>");
  return `${out.join("\n")}\n`;
}
