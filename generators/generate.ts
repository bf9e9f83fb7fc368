// `npm run generate`: spec/ -> generated/. Idempotent; CI fails when generated/ drifts from spec/.
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { GENERATED_DIR, loadOpenApi } from "./spec-files.ts";
import { openapiTypesSource } from "./openapi-types.ts";
import { validatorSources } from "./validators.ts";
import { routesSource, handlersSource } from "./routes.ts";
import { fetchClientSource, writeHeyApiSdk } from "./sdk.ts";
import { asyncapiMessageSchemas, generateAsyncApiTypes } from "./asyncapi.ts";
import { enumsSource } from "./enums.ts";

/** Writes every generated file under `outDir` and returns their relative names. */
export async function generate(outDir = GENERATED_DIR): Promise<string[]> {
  const doc = loadOpenApi();
  const eventSchemas = (await asyncapiMessageSchemas()) as Record<string, never>;
  const files: Record<string, string> = {
    "openapi-types.ts": await openapiTypesSource(),
    "asyncapi-types.ts": await generateAsyncApiTypes(),
    "fetch-client.ts": fetchClientSource(),
    "routes.ts": routesSource(doc, eventSchemas),
    "handlers.ts": handlersSource(doc),
    "enums.ts": enumsSource(doc),
    ...validatorSources(doc, eventSchemas),
  };
  await mkdir(outDir, { recursive: true });
  // Remove files a previous spec produced and this one does not.
  for (const entry of await readdir(outDir)) {
    if (entry !== "sdk" && !(entry in files)) await rm(path.join(outDir, entry), { recursive: true, force: true });
  }
  for (const [name, source] of Object.entries(files)) await writeFile(path.join(outDir, name), source);
  await writeHeyApiSdk(path.join(outDir, "sdk"));
  return [...Object.keys(files), "sdk/"];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const outDir = process.argv[2] ? path.resolve(process.argv[2]) : GENERATED_DIR;
  const written = await generate(outDir);
  console.log(`generated ${written.length} entries in ${path.relative(process.cwd(), outDir) || "."}: ${written.join(", ")}`);
}
