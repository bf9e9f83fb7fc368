// What a long-running command tells the operator on its first stop signal, `serve` and `worker` alike.

/** The wait a first stop signal begins, or null when there is none (no running job, or no grace). */
export function graceWait(running: number, graceMs: number, signal: string): string | null {
  if (running <= 0 || graceMs <= 0) return null;
  return `waiting up to ${graceMs / 1000}s for ${running} running job(s) (${signal} again stops them now)`;
}
