// docs/errors.md against the spec: every v2 error code with its only status, every known job error
// code with whether retrying helps as x-non-retryable says, every hosted error type with its
// status; no code the spec does not have.
import { describe, expect, it } from "vitest";
import { ERROR_CODE_STATUS, HOSTED_ERROR_TYPE_STATUS, JOB_ERROR_CODES, NON_RETRYABLE_JOB_ERROR_CODES } from "../../generated/enums.ts";
import { read, tableRows } from "./markdown.ts";

/** The table rows of the section of docs/errors.md whose heading starts with `heading`. */
function sectionRows(text: string, heading: string): string[][] {
  const section = text.split(/^## /m).find((s) => s.startsWith(heading));
  expect(section, `section "${heading}"`).toBeDefined();
  return tableRows(section!).filter((cells) => /^`[a-z_]+`$/.test(cells[0]!));
}

const code = (cell: string) => cell.replaceAll("`", "");
const TEXT = read("docs/errors.md");

describe("docs/errors.md", () => {
  it("lists every v2 error code once, with the spec's status, and no other", () => {
    const rows = sectionRows(TEXT, "v2 HTTP errors");
    expect(rows.map((r) => code(r[0]!)).sort()).toEqual(Object.keys(ERROR_CODE_STATUS).sort());
    for (const r of rows) expect(Number(r[1]), r[0]).toBe(ERROR_CODE_STATUS[code(r[0]!) as keyof typeof ERROR_CODE_STATUS]);
    // A 429 is retried after its Retry-After; nothing else says so.
    for (const r of rows) expect(r[3] === "after Retry-After", r[0]).toBe(r[1] === "429");
  });

  it("lists every known job error code once; retrying helps for none of the spec's non-retryable ones", () => {
    const rows = sectionRows(TEXT, "Job errors");
    expect(rows.map((r) => code(r[0]!)).sort()).toEqual([...JOB_ERROR_CODES].sort());
    for (const c of NON_RETRYABLE_JOB_ERROR_CODES) expect(rows.find((r) => code(r[0]!) === c)![2], c).toBe("no");
  });

  it("lists every hosted error type once, with the spec's status, and no other", () => {
    const rows = sectionRows(TEXT, "Hosted errors");
    expect(rows.map((r) => code(r[0]!)).sort()).toEqual(Object.keys(HOSTED_ERROR_TYPE_STATUS).sort());
    for (const r of rows) expect(Number(r[1]), r[0]).toBe(HOSTED_ERROR_TYPE_STATUS[code(r[0]!) as keyof typeof HOSTED_ERROR_TYPE_STATUS]);
  });

  it("every row says whether retrying helps and what to do", () => {
    for (const heading of ["v2 HTTP errors", "Job errors", "Hosted errors"])
      for (const r of sectionRows(TEXT, heading)) {
        expect(["no", "yes", "after Retry-After"], `${heading} ${r[0]}`).toContain(r.at(-2));
        expect(r.at(-1)!.length, `${heading} ${r[0]}`).toBeGreaterThan(5);
      }
  });

  it("would notice a code missing or with another status (the check can fail)", () => {
    const dropped = TEXT.replace(/^\| `queue_full` \| 429 .*\n/m, "");
    expect(sectionRows(dropped, "v2 HTTP errors").map((r) => code(r[0]!))).not.toContain("queue_full");
    const wrong = TEXT.replace("| `not_found` | 404 | no such job", "| `not_found` | 410 | no such job");
    expect(sectionRows(wrong, "v2 HTTP errors").find((r) => r[0] === "`not_found`")![1]).toBe("410");
  });
});
