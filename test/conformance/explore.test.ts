// The model-based sequences (--explore): they pass against the double, and against a double whose
// label-filtered listing leaves out the 4th newest match, or whose delete of an upload keeps it,
// they fail under their rule with the sequence shrunk to what shows it (four submissions and a
// listing; an upload, its delete and one more call) and printed as requests.
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
    const report = await runAgainstDouble({ breaks: ["listSkipsFourth"] }, { only: ["GET-1"], explore: 100, seed: SEED });
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

  it("find an asset a delete kept, shrink the sequence to an upload, its delete and one more call, and print its requests", { timeout: 300_000 }, async () => {
    const report = await runAgainstDouble({ breaks: ["deleteKeepsAsset"] }, { only: ["GET-1"], explore: 300, seed: SEED });
    expect(report.failedRules, failureLines(report)).toEqual(["GET-1"]);
    const message = report.results.find((r) => TITLE.test(r.title))!.failures[0]!.message;
    expect(message).toContain(`--seed ${SEED}`);
    const sequence = /^sequence: (.*)$/m.exec(message)?.[1] ?? "";
    // Shrunk to what shows it: one upload, its delete, then a call the deleted asset answers; nothing about jobs.
    const commands = sequence.split(",").map((c) => c.trim().replace(/\(.*/, ""));
    expect(commands.slice(0, 2)).toEqual(["upload", "deleteAsset"]);
    expect(commands).toHaveLength(3);
    const requests = message.split("\nrequests:\n")[1]!.split("\n");
    expect(requests.map((l) => l.trim().split(" ").slice(0, 2).join(" ")).slice(0, 2)).toEqual(["POST /api/v2/assets", "DELETE /api/v2/assets/$ID1"]);
    expect(requests).toHaveLength(3);
  });
});
