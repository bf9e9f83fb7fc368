// Typecheck proves the views follow the spec: in a copy of the project, a field added to the
// spec's Asset fails typecheck of the server until the view carries it.
import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import YAML from "yaml";
import { openapiTypesSource } from "../../generators/openapi-types.ts";
import { ROOT } from "../../generators/spec-files.ts";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "flowgate-views-"));
  for (const part of ["src", "generated", "generators", "spec"]) await cp(path.join(ROOT, part), path.join(dir, part), { recursive: true });
  await symlink(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
  await writeFile(path.join(dir, "package.json"), JSON.stringify({ type: "module" }));
  const base = JSON.parse(await readFile(path.join(ROOT, "tsconfig.json"), "utf8")) as { compilerOptions: object };
  // The server's entry: every handler and view it mounts is checked from there.
  await writeFile(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: base.compilerOptions, files: ["src/server/app.ts"] }));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function typecheck(): Promise<{ ok: boolean; output: string }> {
  const tsc = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");
  return new Promise((resolve) =>
    execFile(process.execPath, [tsc, "-p", path.join(dir, "tsconfig.json")], { cwd: dir, timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ ok: err === null, output: `${stdout}${stderr}` }),
    ),
  );
}

it("a required field added to the spec's Asset fails typecheck until assetView carries it", { timeout: 300_000 }, async () => {
  const specPath = path.join(dir, "spec", "openapi.yaml");
  const spec = YAML.parse(await readFile(specPath, "utf8"));
  const asset = spec.components.schemas.Asset;
  asset.required.push("origin_region");
  asset.properties.origin_region = { type: "string", description: "Where the bytes were stored first." };
  await writeFile(specPath, YAML.stringify(spec));
  await writeFile(path.join(dir, "generated", "openapi-types.ts"), await openapiTypesSource(specPath));

  const missing = await typecheck();
  expect(missing.ok).toBe(false);
  expect(missing.output).toMatch(/src\/server\/views\.ts.*origin_region/s);

  const viewsPath = path.join(dir, "src", "server", "views.ts");
  const views = await readFile(viewsPath, "utf8");
  const carried = views.replace("    expires_at: iso(asset.expires_at),\n", '    expires_at: iso(asset.expires_at),\n    origin_region: "local",\n');
  expect(carried).not.toBe(views);
  await writeFile(viewsPath, carried);
  const fixed = await typecheck();
  expect(fixed.output).toBe("");
  expect(fixed.ok).toBe(true);
});
