// "Did you mean" for the command line: the nearest command or flag to a mistyped one.
import { closest as nearest } from "../engine/suggest.ts";

/**
 * The known name nearest to a mistyped one (the engine's typo distance), or the one known name it
 * begins, or the one it is the last word of (`--url` for `--base-url`), or undefined.
 */
export function closest(name: string, candidates: Iterable<string>): string | undefined {
  const known = [...candidates];
  const near = nearest(name, known);
  if (near !== null) return near;
  const lower = name.toLowerCase();
  if (lower.length < 2) return undefined;
  const prefixed = known.filter((c) => c.toLowerCase().startsWith(lower));
  if (prefixed.length === 1) return prefixed[0];
  const lastWord = known.filter((c) => c.toLowerCase().endsWith(`-${lower}`));
  return prefixed.length === 0 && lastWord.length === 1 ? lastWord[0] : undefined;
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
