// `npm run build [-- server|client]`: compiles the server package (src/, conformance/, generated/
// into dist/) and the client package (src/index.ts and what it imports, plus the generated SDKs,
// into packages/client/dist/), JS and .d.ts. Both mirror the source tree, so relative imports
// between modules hold; tsc rewrites their .ts extensions to .js. Runs on Node 24 as it is.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const TSC = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");

/** Empties `outDir`, then compiles `project` into it (the build stops on a type error). */
function tsc(project: string, outDir: string): void {
  rmSync(outDir, { recursive: true, force: true });
  const result = spawnSync(process.execPath, [TSC, "-p", project], { cwd: ROOT, stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/** The compiled trees of the server package; files in them that tsc does not compile are copied as they are. */
const SERVER_TREES = ["src", "conformance", "generated"];

/**
 * The server: every module of src/, conformance/ and generated/, plus the files beside them that
 * are read or imported at run time as they are (the ajv validators, which are JS already, with
 * their .d.ts; data files a module may add). Documentation stays out.
 */
function buildServer(): void {
  const out = path.join(ROOT, "dist");
  tsc("tsconfig.build.json", out);
  for (const tree of SERVER_TREES) {
    for (const entry of readdirSync(path.join(ROOT, tree), { withFileTypes: true, recursive: true })) {
      if (!entry.isFile() || entry.name.endsWith(".md") || (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts"))) continue;
      const relative = path.relative(ROOT, path.join(entry.parentPath, entry.name));
      mkdirSync(path.dirname(path.join(out, relative)), { recursive: true });
      copyFileSync(path.join(ROOT, relative), path.join(out, relative));
    }
  }
}

/** The client package: its tsconfig lists the entry points; tsc follows their imports. */
function buildClient(): void {
  tsc("packages/client/tsconfig.json", path.join(ROOT, "packages", "client", "dist"));
}

const which = process.argv[2] ?? "all";
if (which !== "all" && which !== "server" && which !== "client") {
  console.error(`build: unknown target "${which}" (server, client, or none for both)`);
  process.exit(2);
}
if (which !== "client") buildServer();
if (which !== "server") buildClient();
