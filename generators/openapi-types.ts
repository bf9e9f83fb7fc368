// TypeScript types of the OpenAPI document, by openapi-typescript.
import openapiTS, { astToString } from "openapi-typescript";
import { pathToFileURL } from "node:url";
import { BANNER, OPENAPI_PATH } from "./spec-files.ts";

/** Source of generated/openapi-types.ts (from another copy of the spec when `specPath` is given). */
export async function openapiTypesSource(specPath = OPENAPI_PATH): Promise<string> {
  const ast = await openapiTS(pathToFileURL(specPath), { alphabetize: false, exportType: false, emptyObjectsUnknown: true });
  return BANNER + astToString(ast);
}
