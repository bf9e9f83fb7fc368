// The report forms and the CLI: a table per group, failures with rule, request and excerpt,
// JSON, JUnit XML, exit codes, --help.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { formatConsole, formatProgress, main, parseCli, toJson, toJUnit, USAGE, type CheckResult } from "../../conformance/index.ts";
import { buildReport, resolveOptions } from "../../conformance/runner.ts";
import { startDouble } from "./double/server.ts";

const result = (over: Partial<CheckResult>): CheckResult => ({
  rule: "SUB-6",
  group: "SUB",
  title: "SUB-6 an invalid graph is 422",
  status: "passed",
  durationMs: 5,
  failures: [],
  kind: "check",
  static: false,
  ...over,
});

const report = buildReport(resolveOptions({ baseUrl: "http://host/deployment/x" }), true, Date.now() - 1000, [
  result({}),
  result({
    rule: "ERR-3",
    group: "ERR",
    title: "ERR-3 every 429 carries Retry-After <integer> & more",
    status: "failed",
    failures: [
      {
        rule: "ERR-3",
        message: 'Retry-After "1.5"',
        request: "POST http://host/api/v2/jobs {}",
        excerpt: '429 (application/json) Retry-After: 1.5 {"error":{"code":"queue_full"}}',
      },
    ],
  }),
  result({ rule: "GET-2", group: "GET", title: "GET-2 another caller", status: "skipped", reason: "no second caller given" }),
]);

describe("report forms", () => {
  it("counts per group and overall", () => {
    expect(report.groups.map((g) => [g.group, g.passed, g.failed, g.skipped])).toEqual([
      ["SUB", 1, 0, 0],
      ["GET", 0, 0, 1],
      ["ERR", 0, 1, 0],
    ]);
    expect(report.totals).toEqual({ passed: 1, failed: 1, skipped: 1, unsupported: 0 });
    expect(report.failedRules).toEqual(["ERR-3"]);
    expect(report.ok).toBe(false);
  });

  it("the console shows each failure with its rule, request and excerpt, and each skip reason", () => {
    const text = formatConsole(report);
    expect(text).toMatch(/SUB\s+Submit\s+1\s+0\s+0/);
    expect(text).toContain("[ERR-3] Retry-After");
    expect(text).toContain("request:  POST http://host/api/v2/jobs");
    expect(text).toContain("response: 429 (application/json) Retry-After: 1.5");
    expect(text).toContain("GET-2 another caller: no second caller given");
    expect(text).toContain("FAIL: 1 failed (ERR-3)");
  });

  it("a skip reason several checks share is said once, in the summary and in the progress lines", () => {
    const why = "no second caller given (pass --other-token)";
    const skips = ["GET-2 another caller's job is 404", "SUB-7 another caller's asset"].map((title) =>
      result({ rule: title.split(" ")[0], group: title.split("-")[0], title, status: "skipped", reason: why }),
    );
    const text = formatConsole(buildReport(resolveOptions({ baseUrl: "http://host" }), false, Date.now(), [...skips]));
    expect(text.split(why)).toHaveLength(2);
    expect(text).toContain(`  - ${why}; 2 checks:\n      SUB-7 another caller's asset\n      GET-2 another caller's job is 404`);
    const said = new Map<string, string>();
    expect(skips.map((s) => formatProgress(s, said))).toEqual([
      `- GET-2 another caller's job is 404 (skipped: ${why})`,
      "- SUB-7 another caller's asset (skipped: as GET-2 above)",
    ]);
  });

  it("JSON round-trips", () => {
    expect(JSON.parse(toJson(report))).toEqual(JSON.parse(JSON.stringify(report)));
  });

  it("JUnit has one suite per group, failures and skips, escaped", () => {
    const xml = toJUnit(report);
    expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites /);
    expect((xml.match(/<testsuite /g) ?? []).length).toBe(3);
    expect(xml).toContain('<failure message="Retry-After &quot;1.5&quot;" type="ERR-3">');
    expect(xml).toContain("&lt;integer&gt; &amp; more");
    expect(xml).toContain('<skipped message="no second caller given"/>');
    expect((xml.match(/<testcase /g) ?? []).length).toBe(3);
  });
});

describe("the CLI", () => {
  it("--help prints the usage and exits 0", async () => {
    let out = "";
    expect(await main(["--help"], (s) => (out += s))).toBe(0);
    expect(out).toBe(USAGE);
    expect(out).toContain("--base-url");
  });

  it("a missing --base-url, an unknown flag or a bad surface exit 2 with the usage", async () => {
    for (const argv of [
      [],
      ["--base-url", "http://x", "--bogus"],
      ["--base-url", "http://x", "--surface", "moon"],
      ["--base-url", "http://x", "--fill-queue", "-1"],
    ]) {
      let err = "";
      expect(
        await main(
          argv,
          () => undefined,
          (s) => (err += s),
        ),
        argv.join(" "),
      ).toBe(2);
      expect(err).toContain("Usage:");
    }
  });

  it("parses every option", () => {
    const { options, reportJson, junit } = parseCli([
      "--base-url",
      "http://h/deployment/d",
      "--token",
      "t",
      "--surface",
      "serverless",
      "--only",
      "SUB, IDEM-2",
      "--fill-queue",
      "5",
      "--report-json",
      "r.json",
      "--junit",
      "r.xml",
      "--demo",
      "--reread-after-seconds",
      "2.5",
    ]);
    expect(options).toMatchObject({
      baseUrl: "http://h/deployment/d",
      token: "t",
      surface: "serverless",
      only: ["SUB", "IDEM-2"],
      fillQueue: 5,
      demo: true,
      rereadAfterSeconds: 2.5,
    });
    expect([reportJson, junit]).toEqual(["r.json", "r.xml"]);
  });

  it("exits 0 on a conforming server and 1 on a broken one, writing JSON and JUnit", { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "conformance-"));
    for (const [breaks, code] of [
      [[], 0],
      [["sseIdLines"], 1],
    ] as const) {
      const d = await startDouble({ breaks: [...breaks] });
      try {
        const json = path.join(dir, `r${code}.json`);
        const xml = path.join(dir, `r${code}.xml`);
        const argv = ["--base-url", d.baseUrl, "--only", "SSE,URL", "--slow-seconds", "0.3", "--quiet", "--report-json", json, "--junit", xml];
        expect(
          await main(
            argv,
            () => undefined,
            () => undefined,
          ),
        ).toBe(code);
        const written = JSON.parse(readFileSync(json, "utf8"));
        expect(written.ok).toBe(code === 0);
        expect(readFileSync(xml, "utf8")).toContain("<testsuites");
        if (code === 1) expect(written.failedRules).toEqual(["SSE-1"]);
      } finally {
        await d.close();
      }
    }
  });

  it("exits 2 when the base URL does not answer", async () => {
    let err = "";
    expect(
      await main(
        ["--base-url", "http://127.0.0.1:9", "--quiet", "--timeout-ms", "2000"],
        () => undefined,
        (s) => (err += s),
      ),
    ).toBe(2);
    expect(err).toContain("conformance:");
  });
});
