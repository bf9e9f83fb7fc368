// The hosted routes a whole run once never called (GET /api/prompt, POST /api/interrupt naming a
// prompt, POST /api/history, /api/view of each file type, a node's own definition) and TEXT
// frames: each check passes against the double and fails, under its rule alone, against a double
// broken for it.
import { describe, expect, it } from "vitest";
import type { Breakage } from "./double/server.ts";
import { failureLines, runAgainstDouble } from "./helpers.ts";

const CASES: Array<{ breakage: Breakage; rules: string[] }> = [
  { breakage: "promptInfoOffByOne", rules: ["HOST-7"] },
  { breakage: "interruptIgnoresPromptId", rules: ["HOST-8"] },
  { breakage: "historyDeleteIgnored", rules: ["HOST-5"] },
  { breakage: "historyDeleteEndsJob", rules: ["HOST-5"] },
  { breakage: "nodeInfoOtherClass", rules: ["HOST-1"] },
];

const WS_CASES: Array<{ breakage: Breakage; rules: string[] }> = [{ breakage: "textFrameTruncated", rules: ["WS-5"] }];

describe.concurrent("the hosted routes' checks", () => {
  it("pass against the double, and the run reaches each route they call", { timeout: 300_000 }, async () => {
    const report = await runAgainstDouble({}, { only: ["HOST"] });
    expect(report.ok, failureLines(report)).toBe(true);
    // The routes these checks exist to call (the double serves no /api/jobs: HJOB skips there).
    const ours = [
      "hostedGetNodeInfo",
      "hostedGetSystemStats",
      "hostedGetPromptInfo",
      "hostedInterrupt",
      "hostedManageHistory",
      "hostedGetHistoryEntry",
      "hostedView",
    ];
    expect(report.coverage!.operations.unreached.filter((u) => ours.some((op) => u.id.endsWith(`(${op})`)))).toEqual([]);
  });

  for (const [group, cases] of [
    ["HOST", CASES],
    ["WS", WS_CASES],
  ] as const) {
    for (const c of cases) {
      it(`${c.breakage} -> ${c.rules.join(", ")}`, { timeout: 300_000 }, async () => {
        const report = await runAgainstDouble({ breaks: [c.breakage] }, { only: [group] });
        expect(report.failedRules, failureLines(report)).toEqual(c.rules);
      });
    }
  }
});
