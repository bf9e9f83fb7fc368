// "Did you mean": the known name nearest to a mistyped one, by edit distance.

/** Optimal string alignment distance (Levenshtein plus swapped neighbours), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  if (s === t) return 0;
  const rows: number[][] = [Array.from({ length: t.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= s.length; i++) {
    const row = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row.push(d);
    }
    rows.push(row);
  }
  return rows[s.length]![t.length]!;
}

/**
 * The candidate nearest to `name`, or null when none is near enough to be a likely typo: at most
 * a third of the name's length away (at least 1, at most 3 edits), or equal but for case.
 */
export function closest(name: string, candidates: Iterable<string>): string | null {
  // Longer names would cost the distance table more than a hint is worth.
  if (name.length === 0 || name.length > 200) return null;
  const limit = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const c of candidates) {
    if (c === name || Math.abs(c.length - name.length) > limit) continue;
    const d = editDistance(name, c);
    if (d < bestDistance || (d === bestDistance && best !== null && c < best)) {
      best = c;
      bestDistance = d;
    }
  }
  return bestDistance <= limit ? best : null;
}
