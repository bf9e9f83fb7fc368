// The certification-style results: rules a surface declares it does not support are reported as
// such (not failed, not skipped), and the HTML report is one self-contained page with every rule,
// each failure's exchange, and no secret of the run.
import { describe, expect, it } from "vitest";
import { formatConsole, toHtml, toJson, toJUnit } from "../../conformance/index.ts";
import { RULES } from "../../conformance/rules.ts";
import { failureLines, runAgainstDouble } from "./helpers.ts";

describe.concurrent("a certification-style result", () => {
  it("declared features are 'not supported (declared)', apart from failed and skipped, and the summary says so", { timeout: 300_000 }, async () => {
    const report = await runAgainstDouble({}, { only: ["LBL", "HOST-1"], unsupported: ["labels"] });
    expect(report.ok, failureLines(report)).toBe(true);
    const lbl = report.results.filter((r) => r.group === "LBL");
    expect(lbl.length).toBeGreaterThan(0);
    expect(lbl.every((r) => r.status === "unsupported")).toBe(true);
    expect(report.totals.unsupported).toBe(lbl.length);
    expect(report.results.find((r) => r.rule === "HOST-1")?.status).toBe("passed");
    expect(formatConsole(report)).toMatch(/PASS: \d+ passed, \d+ skipped, \d+ not supported \(declared\)/);
    expect(toJUnit(report)).toContain('<skipped message="not supported (declared)"/>');
    expect(toHtml(report)).toContain("not supported (declared)");
  });

  it("the HTML report lists every rule, shows a failure's exchange, and redacts the run's keys", { timeout: 300_000 }, async () => {
    const key = "tok-secret-4f1c9e";
    const report = await runAgainstDouble({ tokens: [key], breaks: ["keyInLocation"] }, { token: key, only: ["HOST-6"] });
    expect(report.failedRules).toContain("HOST-6");
    const html = toHtml(report);
    for (const r of RULES) expect(html).toContain(`${r.id}</h3>`);
    expect(html).toMatch(/<section class="rule failed"><h3><span class="st">failed<\/span> HOST-6<\/h3>/);
    expect(html).toMatch(/request: GET http:\/\/[^<]*\/api\/view/);
    expect(html).toMatch(/response: 302 Location: [^<]*\[redacted\]/);
    expect(html).toContain("[redacted]");
    for (const text of [html, toJson(report), toJUnit(report), formatConsole(report)]) expect(text).not.toContain(key);
    expect(html).not.toMatch(/<script|<link|src=/);
  });
});
