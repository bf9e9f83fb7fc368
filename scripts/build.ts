// `npm run build [-- server|client]`: compiles the server package (src/, conformance/, generated/
// into dist/) and the client package (src/index.ts and what it imports, plus the generated SDKs,
// into packages/client/dist/), JS and .d.ts. Both mirror the source tree, so relative imports
// between modules hold; tsc rewrites their .ts extensions to .js. Runs on Node 24 as it is.
import { spawnSync } from "node:child_process";
import { copyFileSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const TSC = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");

function tsc(project: string, outDir: string): void {
  rmSync(outDir, { recursive: true, force: true });
  const result = spawnSync(process.execPath, [TSC, "-p", project], { cwd: ROOT, stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/** The server: every module of src/, conformance/ and generated/; the ajv validators are JS already, so they are copied. */
function buildServer(): void {
  const out = path.join(ROOT, "dist");
  tsc("tsconfig.build.json", out);
  const generated = path.join(ROOT, "generated");
  for (const file of readdirSync(generated)) {
    if (file.endsWith(".js") || (file.endsWith(".d.ts") && readdirSync(generated).includes(file.replace(/\.d\.ts$/, ".js")))) {
      copyFileSync(path.join(generated, file), path.join(out, "generated", file));
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
