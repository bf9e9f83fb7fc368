// The version of this flowgate: the `version` of its package.json, which sits at the root of a
// checkout (above src/) and of an installed package (above dist/src/).
import { readFileSync } from "node:fs";

let cached: string | undefined;

/** flowgate's version, like `0.1.0` ("unknown" when no package.json of flowgate is found). */
export function flowgateVersion(): string {
  if (cached !== undefined) return cached;
  cached = "unknown";
  for (const up of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "flowgate" && typeof pkg.version === "string") {
        cached = pkg.version;
        break;
      }
    } catch {
      // not at this level
    }
  }
  return cached;
}
