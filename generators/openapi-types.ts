// TypeScript types of the OpenAPI document, by openapi-typescript.
import openapiTS, { astToString } from "openapi-typescript";
import { pathToFileURL } from "node:url";
import { BANNER, OPENAPI_PATH } from "./spec-files.ts";

/** Source of generated/openapi-types.ts. */
export async function openapiTypesSource(): Promise<string> {
  const ast = await openapiTS(pathToFileURL(OPENAPI_PATH), { alphabetize: false, exportType: false, emptyObjectsUnknown: true });
  return BANNER + astToString(ast);
}
