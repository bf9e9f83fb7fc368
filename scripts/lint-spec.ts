// `npm run lint:spec`: Spectral (OpenAPI rules + the project's) on spec/openapi.yaml and the
// AsyncAPI parser on spec/asyncapi.yaml. Any error or warning fails.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { ROOT } from "../generators/spec-files.ts";
import { validateAsyncApi } from "../generators/asyncapi.ts";

const spectral = spawnSync(
  path.join(ROOT, "node_modules", ".bin", "spectral"),
  ["lint", "spec/openapi.yaml", "--ruleset", "spec/.spectral.yaml", "--fail-severity", "warn"],
  { cwd: ROOT, stdio: "inherit" },
);
const asyncapi = await validateAsyncApi();
for (const e of asyncapi.errors) console.error(`asyncapi error: ${e}`);
for (const w of asyncapi.warnings) console.error(`asyncapi warning: ${w}`);
const asyncapiOk = asyncapi.errors.length === 0 && asyncapi.warnings.length === 0;
console.log(asyncapiOk ? "spec/asyncapi.yaml: valid, no diagnostics" : "spec/asyncapi.yaml: has diagnostics");
process.exit(spectral.status === 0 && asyncapiOk ? 0 : 1);
