// "Did you mean": the known name closest to a mistyped one, when it is close enough to be a typo.

/** Edit distance (insertions, deletions, substitutions, and swaps of neighbours). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The candidate closest to `name` within a third of its length (at least 1, at most 3 edits), or a candidate `name` is a prefix of; else undefined. */
export function closest(name: string, candidates: Iterable<string>): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const distance = editDistance(lower, c.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [c, distance];
  }
  const limit = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  if (best !== undefined && bestDistance <= limit) return best;
  const prefixed = [...candidates].filter((c) => lower.length >= 2 && c.toLowerCase().startsWith(lower));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

/** ` (did you mean --x?)` for an unknown flag, or "". */
export function flagHint(flag: string, known: Iterable<string>): string {
  const match = closest(flag.replace(/^-+/, "").replace(/=.*$/, ""), known);
  return match ? `; did you mean --${match}?` : "";
}

/**
 * A message of node's parseArgs about an unknown option, rewritten with a suggestion; other
 * messages unchanged. parseArgs says `Unknown option '--bse-url'. To specify a positional ...`.
 */
export function explainParseError(message: string, known: Iterable<string>): string {
  const unknown = /^Unknown option '(-{1,2}[^']+)'/.exec(message);
  if (unknown) return `unknown flag ${unknown[1]}${flagHint(unknown[1]!, known)}`;
  return message;
}
