// The request log for a person at a terminal: pino's JSON lines turned into short text lines.
// JSON stays the format for pipes, files and log collectors (--log-format json).

/** Pino's numeric levels as words. */
const LEVELS: Record<number, string> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };

/** One pino JSON line as `12:00:01 INFO  GET /api/v2/jobs 201 3ms`, or the line itself when it is not JSON. */
export function prettyLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith("\n") ? json : `${json}\n`;
  }
  const time = typeof entry.time === "number" ? new Date(entry.time).toISOString().slice(11, 19) : "--:--:--";
  const level = (LEVELS[entry.level as number] ?? String(entry.level)).padEnd(5);
  const req = entry.req as { method?: string; path?: string } | undefined;
  const res = entry.res as { statusCode?: number } | undefined;
  const took = typeof entry.responseTime === "number" ? ` ${Math.round(entry.responseTime)}ms` : "";
  const text = req?.method ? `${req.method} ${req.path ?? ""} ${res?.statusCode ?? ""}${took}`.trimEnd() : String(entry.msg ?? "");
  const err = entry.err as { message?: string } | undefined;
  return `${time} ${level} ${text}${err?.message ? `: ${err.message}` : ""}\n`;
}

/** A pino destination that writes each line pretty on `out` (a terminal: synchronous, so nothing is lost at exit). */
export function prettyStream(out: { write(text: string): unknown }): { write(line: string): void } {
  return { write: (line) => void out.write(prettyLine(line.trimEnd())) };
}
