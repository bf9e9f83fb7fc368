// Subscription tiers: how many jobs of one account run at once.

/** Tier name -> concurrent jobs. */
export type TierTable = Record<string, number>;

/** The default table; `--tiers` replaces it. */
export const DEFAULT_TIERS: TierTable = { free: 1, pro: 3, team: 10 };

/** Parses `free=1,pro=3,team=10`. */
export function parseTiers(text: string): TierTable {
  const table: TierTable = {};
  for (const part of text
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z0-9_-]+)=(\d+)$/.exec(part);
    if (!m || Number(m[2]) < 1) throw new Error(`invalid tier "${part}" (use name=jobs, e.g. pro=3)`);
    table[m[1]!] = Number(m[2]);
  }
  if (Object.keys(table).length === 0) throw new Error("the tier table is empty");
  return table;
}
