// What the browser tests share: Debian's Chromium driven by playwright-core, a UI build no older
// than its source, and where screenshots go.
import { existsSync, readdirSync, statSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { build } from "vite";
import { UI_DIST } from "../../src/server/ui.ts";
import { ROOT } from "../server/helpers.ts";

export const CHROMIUM = process.env.FLOWGATE_CHROMIUM ?? "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);
/** Where every test's screenshots go (not committed). */
export const SHOTS = join(ROOT, "test-output/screenshots");
/** With FLOWGATE_DOCS_SCREENSHOTS=1 the shots docs/dashboard.md shows are also written into docs/img. */
export const DOC_SHOTS = process.env.FLOWGATE_DOCS_SCREENSHOTS === "1" ? join(ROOT, "docs/img") : null;
/** Headless, and quiet on the network: without the background-networking flags Chromium reaches for Google's hosts, which a closed network refuses. */
export const LAUNCH = {
  executablePath: CHROMIUM,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
};
if (!hasChromium) console.warn(`dashboard browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set FLOWGATE_CHROMIUM)`);

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "dist" || entry.name === "node_modules") continue;
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds the pages when there is no build or a source file of ui/ changed after it; makes the screenshot folders. */
export async function prepareUi(): Promise<void> {
  const index = join(UI_DIST, "index.html");
  if (!existsSync(index) || statSync(index).mtimeMs < newestSource(join(ROOT, "ui"))) {
    await build({ configFile: join(ROOT, "ui/vite.config.ts"), logLevel: "warn" });
  }
  await mkdir(SHOTS, { recursive: true });
  if (DOC_SHOTS) await mkdir(DOC_SHOTS, { recursive: true });
}
