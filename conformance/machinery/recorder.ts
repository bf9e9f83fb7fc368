// Violations found automatically (every response, event and message the suite sees), collected
// per rule so that the report shows each rule once with the distinct ways it was broken.
import type { FailureDetail } from "../types.ts";

/** Per-rule tally of automatic validation. */
export interface RuleTally {
  /** How many times the rule was evaluated. */
  evaluated: number;
  /** Distinct violations, first occurrence of each. */
  failures: FailureDetail[];
  /** Occurrences of each distinct violation, parallel to failures. */
  counts: number[];
  /** Dedupe keys, parallel to failures. */
  keys: string[];
}

const MAX_DISTINCT = 20;

/** Collects automatic evaluations and violations by rule ID. */
export class Recorder {
  readonly tallies = new Map<string, RuleTally>();

  private tally(rule: string): RuleTally {
    let t = this.tallies.get(rule);
    if (!t) this.tallies.set(rule, (t = { evaluated: 0, failures: [], counts: [], keys: [] }));
    return t;
  }

  /** Notes that a rule was evaluated once (and held, unless violate is called too). */
  evaluated(...rules: string[]): void {
    for (const r of rules) this.tally(r).evaluated++;
  }

  /** Records a violation; the same rule and key is counted once and shown once. */
  violate(detail: FailureDetail, key = detail.message): void {
    const t = this.tally(detail.rule);
    t.evaluated++;
    const i = t.keys.indexOf(key);
    if (i >= 0) {
      t.counts[i]!++;
      return;
    }
    if (t.failures.length >= MAX_DISTINCT) return;
    t.failures.push(detail);
    t.keys.push(key);
    t.counts.push(1);
  }
}
