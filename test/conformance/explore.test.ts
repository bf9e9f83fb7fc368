// The model-based sequences (--explore): they pass against the double, and against a double whose
// label-filtered listing leaves out the 4th newest match they fail under their rule with the
// sequence shrunk to what shows it (four submissions and a listing) and printed as requests.
import { describe, expect, it } from "vitest";
import { failureLines, runAgainstDouble } from "./helpers.ts";

const SEED = 42;
const TITLE = /^GET-1 random sequences/;

describe.concurrent(`the model-based sequences (seed ${SEED})`, () => {
  it("agree with the double's answers", { timeout: 300_000 }, async () => {
    const report = await runAgainstDouble({}, { only: ["GET-1"], explore: 15, seed: SEED });
    expect(report.ok, failureLines(report)).toBe(true);
    expect(report.results.find((r) => TITLE.test(r.title))?.status).toBe("passed");
  });

  it("find a listing that drops a job, shrink the sequence to four submissions and a listing, and print its requests", { timeout: 300_000 }, async () => {
    const report = await runAgainstDouble({ breaks: ["listSkipsFourth"] }, { only: ["GET-1"], explore: 20, seed: SEED });
    expect(report.failedRules, failureLines(report)).toEqual(["GET-1"]);
    const message = report.results.find((r) => TITLE.test(r.title))!.failures[0]!.message;
    expect(message).toContain(`--seed ${SEED}`);
    const sequence = /^sequence: (.*)$/m.exec(message)?.[1] ?? "";
    expect(sequence.match(/submit\(/g)).toHaveLength(4);
    expect(sequence.match(/list\(/g)).toHaveLength(1);
    expect(sequence).not.toMatch(/get\(|cancel\(/);
    const requests = message.split("\nrequests:\n")[1]!.split("\n");
    expect(requests.filter((l) => l.startsWith("  POST /api/v2/jobs {"))).toHaveLength(4);
    expect(requests.some((l) => l.startsWith("  GET /api/v2/jobs?metadata%5Bexplore%5D="))).toBe(true);
  });
});
