// The full SDK by @hey-api/openapi-ts, and the thin typed openapi-fetch client.
import { createClient } from "@hey-api/openapi-ts";
import path from "node:path";
import { BANNER, GENERATED_DIR, ROOT } from "./spec-files.ts";

/** Writes generated/sdk/ (hey-api cleans the folder first). */
export async function writeHeyApiSdk(outDir = path.join(GENERATED_DIR, "sdk")): Promise<void> {
  const cwd = process.cwd();
  process.chdir(ROOT); // hey-api reads a relative input path; a bare one is taken as a registry name
  try {
    await createClient({
      input: "./spec/openapi.yaml",
      output: { path: outDir, importFileExtension: ".ts" },
      plugins: ["@hey-api/typescript", "@hey-api/sdk", "@hey-api/client-fetch"],
      logs: { level: "silent", file: false },
    });
  } finally {
    process.chdir(cwd);
  }
}

/** Source of generated/fetch-client.ts: openapi-fetch typed by the OpenAPI paths. */
export function fetchClientSource(): string {
  return `${BANNER}import createClient, { type ClientOptions } from "openapi-fetch";
import type { paths } from "./openapi-types.ts";

/** A typed fetch client for every operation of spec/openapi.yaml. */
export function createFetchClient(options: ClientOptions = {}) {
  return createClient<paths>(options);
}

export type FetchClient = ReturnType<typeof createFetchClient>;
`;
}
