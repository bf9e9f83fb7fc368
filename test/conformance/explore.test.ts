// The model-based sequences (--explore): they pass against the double, and against a double whose
// label-filtered listing leaves out the 4th newest match, or whose from-hash still uses a blob the
// caller deleted, they fail under their rule with the sequence shrunk to what shows it (four
// submissions and a listing; an upload, its delete and a from-hash) and printed as requests.
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
    const report = await runAgainstDouble({ breaks: ["listSkipsFourth"] }, { only: ["GET-1"], explore: 60, seed: SEED });
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

  it("find a from-hash that uses a blob the caller deleted, shrink the sequence to upload, delete and from-hash, and print its requests", {
    timeout: 300_000,
  }, async () => {
    const report = await runAgainstDouble({ breaks: ["fromHashAfterDelete"] }, { only: ["GET-1"], explore: 60, seed: SEED });
    expect(report.failedRules, failureLines(report)).toEqual(["GET-1"]);
    const message = report.results.find((r) => TITLE.test(r.title))!.failures[0]!.message;
    expect(message).toContain(`--seed ${SEED}`);
    expect(message).toMatch(/over which the caller holds no asset, did not answer 404 blob_not_found/);
    const sequence = /^sequence: (.*)$/m.exec(message)?.[1] ?? "";
    // Shrunk to what shows it: one upload, its delete, the from-hash; nothing about jobs.
    expect(sequence.split(",").map((c) => c.trim().replace(/\(.*/, ""))).toEqual(["upload", "deleteAsset", "fromHash"]);
    const requests = message.split("\nrequests:\n")[1]!.split("\n");
    expect(requests.map((l) => l.trim().split(" ").slice(0, 2).join(" "))).toEqual([
      "POST /api/v2/assets",
      "DELETE /api/v2/assets/$ID1",
      "POST /api/v2/assets/from-hash",
    ]);
  });
});
