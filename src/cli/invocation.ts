// How the user can run the command again: the name hints and follow-up lines print.
import { realpathSync, statSync } from "node:fs";
import path from "node:path";

/**
 * `npx flowgate` under npx or when no `flowgate` on PATH is this command (a checkout), else `flowgate`
 * (a global or linked install), so that a printed follow-up runs as written.
 */
export function invokedAs(env: NodeJS.ProcessEnv = process.env, script: string | undefined = process.argv[1]): string {
  if (env.npm_command === "exec") return "npx flowgate";
  const self = script === undefined ? null : realOrNull(script);
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = realOrNull(path.join(dir, "flowgate"));
    if (candidate !== null && candidate === self) return "flowgate";
  }
  return "npx flowgate";
}

function realOrNull(file: string): string | null {
  try {
    return statSync(file).isFile() ? realpathSync(file) : null;
  } catch {
    return null;
  }
}

/** A shell word as typed: bare when it is plain, else single-quoted. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
