// Coverage of the contract's rules: conformance/rules.ts's shared groups are CONTRACT-RULES.md as
// data (compared with ../shared/CONTRACT-RULES.md where it exists), its extension groups (the
// contract's later minor versions) stay apart from them, and every rule ID is checked by a
// conformance check or, for a shared rule, listed in conformance/UNTESTABLE.md with a reason.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../generators/spec-files.ts";
import { ALL_CHECKS, RULES } from "../../conformance/index.ts";
import { EXTENSION_GROUPS, EXTENSION_RULES, groupOf, GROUPS, ruleIdOf, SHARED_GROUPS, SHARED_RULES } from "../../conformance/rules.ts";
import { readShared, WITHOUT_SHARED } from "../shared-contract.ts";

const contractRules = readShared("CONTRACT-RULES.md");
const untestableDoc = readFileSync(path.join(ROOT, "conformance", "UNTESTABLE.md"), "utf8");

/** `| ID | reason |` rows of UNTESTABLE.md. */
function untestable(): Map<string, string> {
  return new Map([...untestableDoc.matchAll(/^\| ([A-Z]+-\d+) \| (.*) \|$/gm)].map((m) => [m[1]!, m[2]!.trim()]));
}

describe("the rule list", () => {
  it.skipIf(contractRules === null)(`rules.ts's shared groups hold every rule of CONTRACT-RULES.md, with the same text${WITHOUT_SHARED}`, () => {
    const fromDoc = [...contractRules!.matchAll(/^- ([A-Z]+-\d+) (.*)$/gm)].map((m) => ({ id: m[1]!, text: m[2]! }));
    expect(fromDoc.length).toBeGreaterThan(90);
    expect(SHARED_RULES.map((r) => ({ id: r.id, text: r.text }))).toEqual(fromDoc);
  });

  it("the extension groups are the project's own: apart from the shared groups, their rules in them only", () => {
    expect(EXTENSION_RULES.length).toBeGreaterThan(0);
    for (const g of Object.keys(EXTENSION_GROUPS)) expect(SHARED_GROUPS[g], g).toBeUndefined();
    for (const r of SHARED_RULES) expect(SHARED_GROUPS[r.group], r.id).toBeDefined();
    for (const r of EXTENSION_RULES) expect(EXTENSION_GROUPS[r.group], r.id).toBeDefined();
    expect(RULES.map((r) => r.id)).toEqual([...SHARED_RULES, ...EXTENSION_RULES].map((r) => r.id));
    expect(new Set(RULES.map((r) => r.id)).size).toBe(RULES.length);
  });

  it("every rule's group is a known group", () => {
    for (const r of RULES) {
      expect(r.group).toBe(groupOf(r.id));
      expect(GROUPS[r.group], r.id).toBeDefined();
    }
  });
});

describe("coverage", () => {
  const checked = new Set(ALL_CHECKS.map((c) => c.rule));
  const listed = untestable();

  it("every rule ID is checked or listed in UNTESTABLE.md", () => {
    const neither = RULES.map((r) => r.id).filter((id) => !checked.has(id) && !listed.has(id));
    expect(neither, `neither checked nor listed: ${neither.join(", ")}`).toEqual([]);
  });

  it("every extension rule is checked (none is left to UNTESTABLE.md)", () => {
    const unchecked = EXTENSION_RULES.map((r) => r.id).filter((id) => !checked.has(id));
    expect(unchecked, `extension rules without a check: ${unchecked.join(", ")}`).toEqual([]);
    expect(EXTENSION_RULES.filter((r) => listed.has(r.id)).map((r) => r.id)).toEqual([]);
  });

  it("no rule is both checked and listed as untestable", () => {
    expect([...listed.keys()].filter((id) => checked.has(id))).toEqual([]);
  });

  it("every UNTESTABLE.md entry is a real rule with a reason", () => {
    expect(listed.size).toBeGreaterThan(0);
    for (const [id, reason] of listed) {
      expect(
        RULES.some((r) => r.id === id),
        id,
      ).toBe(true);
      expect(reason.length, id).toBeGreaterThan(40);
    }
  });

  it("every check title begins with its rule ID and titles are unique", () => {
    for (const c of ALL_CHECKS) expect(ruleIdOf(c.title)).toBe(c.rule);
    const titles = ALL_CHECKS.map((c) => c.title);
    expect(new Set(titles).size).toBe(titles.length);
  });

  it("the static subset has checks from several groups", () => {
    const groups = new Set(ALL_CHECKS.filter((c) => c.static).map((c) => groupOf(c.rule)));
    expect(groups.size).toBeGreaterThanOrEqual(5);
  });
});
