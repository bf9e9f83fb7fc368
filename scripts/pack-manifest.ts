// `npm pack` / `npm publish` of the server package: the package.json that goes into the tarball
// carries no development lifecycle scripts. `prepare` builds the UI in a checkout (on npm install)
// and needs vite, a dev dependency; in a published manifest it would run on an install from git
// and means nothing elsewhere. prepack calls `strip` (after the build), postpack `restore`.
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const MANIFEST = path.join(ROOT, "package.json");
/** The checkout's own package.json while a pack runs. */
const BACKUP = path.join(ROOT, ".package.json.packing");
/** Scripts of the checkout only. */
export const DEVELOPMENT_SCRIPTS = ["prepare", "prepack", "postpack"];

function restore(): void {
  if (existsSync(BACKUP)) renameSync(BACKUP, MANIFEST);
}

const mode = process.argv[2];
if (mode === "strip") {
  restore(); // a pack that stopped before its postpack left the checkout's manifest aside
  copyFileSync(MANIFEST, BACKUP);
  const manifest = JSON.parse(readFileSync(MANIFEST, "utf8")) as { scripts?: Record<string, string> };
  for (const name of DEVELOPMENT_SCRIPTS) delete manifest.scripts?.[name];
  writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
} else if (mode === "restore") {
  restore();
} else {
  console.error(`pack-manifest: expected strip or restore, got "${mode ?? ""}"`);
  process.exit(2);
}
