// The workplace's shared contract folder, ../shared beside the checkout (the seed spec,
// CONTRACT-RULES.md). CI has it; a clone elsewhere does not, and the checks that compare the
// project against it skip there. What the project's own tests need is carried in the project.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "../generators/spec-files.ts";

/** Where the shared contract is looked for. */
export const SHARED_DIR = path.join(ROOT, "..", "shared");

/** Appended to the titles of checks that skip without it: the reason. */
export const WITHOUT_SHARED = existsSync(SHARED_DIR) ? "" : " (skipped: no ../shared beside this checkout)";

/** A file of the shared contract, or null where ../shared is absent. */
export function readShared(relative: string): string | null {
  const file = path.join(SHARED_DIR, relative);
  return existsSync(file) ? readFileSync(file, "utf8") : null;
}
