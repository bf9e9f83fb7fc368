// The version of the package this code runs from, read from its package.json: `flowgate` in a
// checkout or the installed server package, `@flowgate/client` in the client package. Both
// compile this file into a tree that mirrors the sources (dist/src/domain/), so the nearest
// package.json of either name above this file is the right one in every layout.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Names of the packages this source tree is published as. */
const PACKAGE_NAMES: ReadonlySet<string> = new Set(["flowgate", "@flowgate/client"]);

/** The version of the nearest package.json named flowgate or @flowgate/client above `fromDir`. */
export function packageVersionFrom(fromDir: string): string {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    let manifest: { name?: unknown; version?: unknown } | null = null;
    try {
      manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown; version?: unknown };
    } catch {
      // No package.json here (or not JSON): look further up.
    }
    if (manifest && typeof manifest.name === "string" && PACKAGE_NAMES.has(manifest.name) && typeof manifest.version === "string") {
      return manifest.version;
    }
    if (path.dirname(dir) === dir) throw new Error(`no package.json of flowgate or @flowgate/client above ${fromDir}`);
  }
}

/** This package's version, e.g. `0.1.0`. */
export const VERSION: string = packageVersionFrom(path.dirname(fileURLToPath(import.meta.url)));
