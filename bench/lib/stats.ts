// Small statistics helpers: medians of rounds, percentiles of samples, ratio formatting.

/** The median of a non-empty list (the mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The p-th percentile (0..100) of samples, nearest-rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length - 1, Math.max(0, rank - 1))]!;
}

/** The median of per-round ratios a[i]/b[i] (rounds paired in time, so drift cancels). */
export function medianRatio(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  const r: number[] = [];
  for (let i = 0; i < n; i++) if (b[i]! > 0) r.push(a[i]! / b[i]!);
  return median(r);
}

/** A number for a table cell: three significant digits, thousands kept whole. */
export function fmt(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined || Number.isNaN(value)) return "n/a";
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString("en-US");
  if (abs === 0) return "0";
  return Number(value.toPrecision(digits)).toString();
}

/** Monotonic clock in milliseconds (fractional). */
export function nowMs(): number {
  return performance.now();
}

/** process.hrtime.bigint() in nanoseconds: CLOCK_MONOTONIC, comparable across processes on one Linux host. */
export function hrNs(): bigint {
  return process.hrtime.bigint();
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
