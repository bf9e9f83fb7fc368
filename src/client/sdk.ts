// The generated SDK (@hey-api/openapi-ts, generated/sdk/) as a public entry: one function per
// operation of the spec, v2, hosted and probes, the event stream as an async iterator. It is the
// wire-level client: no retries, no link resolution, no download checks (FlowgateClient adds
// those over the openapi-fetch client). Make a client with `createClient({ baseUrl, auth })`
// and pass it as `client` to each call; `auth` is asked per security scheme and must answer
// undefined for `signedUrl` (name "signature"), whose value is a link's own, never the key.
export * from "../../generated/sdk/index.ts";
export { createClient, createConfig } from "../../generated/sdk/client/index.ts";
export type { Client, Config } from "../../generated/sdk/client/index.ts";
