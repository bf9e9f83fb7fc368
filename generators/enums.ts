// The contract's enumerations as values, so src/ imports them instead of copying them: every
// string enum of components.schemas, the values a schema marks `x-terminal`, the known values of
// open strings (`x-known-values`, `x-non-retryable`, `x-from-job-status`), each error code's one
// HTTP status from the `x-error-codes` of the responses that carry it, and each hosted error
// type's status from their `x-hosted-error-types`.
import { BANNER, deref, operations, type Json, type JsonObject } from "./spec-files.ts";

/** `JobStatus` -> `JOB_STATUSES`, `ErrorCode` -> `ERROR_CODES`. */
function constName(schema: string): string {
  const s = scream(schema);
  return s.endsWith("S") ? `${s}ES` : `${s}S`;
}

/** `JobStatus` -> `JOB_STATUS`. */
function scream(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();
}

const list = (values: readonly Json[]) => `[${values.map((v) => JSON.stringify(v)).join(", ")}] as const`;

/** Each value the responses' `extension` lists, with the statuses it is listed under. */
function statusesOf(doc: JsonObject, extension: string): Map<string, Set<number>> {
  const seen = new Map<string, Set<number>>();
  for (const { op } of operations(doc)) {
    for (const [status, response] of Object.entries((op.responses as JsonObject) ?? {})) {
      const r = deref<JsonObject>(doc, response);
      for (const code of (r[extension] as string[] | undefined) ?? []) {
        if (!seen.has(code)) seen.set(code, new Set());
        seen.get(code)!.add(Number(status));
      }
    }
  }
  return seen;
}

/** Every code with the one status its responses declare in `extension`; throws on a code with none or two. */
function errorStatuses(doc: JsonObject, extension: string, codes: readonly string[]): Record<string, number> {
  const seen = statusesOf(doc, extension);
  const out: Record<string, number> = {};
  for (const code of codes) {
    const statuses = [...(seen.get(code) ?? [])];
    if (statuses.length !== 1)
      throw new Error(`${extension}: ${code} is declared with ${statuses.length} statuses (${statuses.join(", ")}); it needs exactly one`);
    out[code] = statuses[0]!;
  }
  return out;
}

/** `{a: 1}` as an exported const object, one key a line. */
const record = (entries: Record<string, Json>) =>
  `{\n${Object.entries(entries)
    .map(([k, v]) => `  ${/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? k : JSON.stringify(k)}: ${JSON.stringify(v)},`)
    .join("\n")}\n} as const`;

/** The name of an open string property's values: `JobError.code` -> `JobErrorCode`, `HostedJobStatus.status` -> `HostedJobStatus`. */
function propertyOwnerName(schema: string, property: string): string {
  const cap = property.charAt(0).toUpperCase() + property.slice(1);
  return schema.endsWith(cap) ? schema : `${schema}${cap}`;
}

/** Constants from the extensions of an open string property (its values are not an enum, so clients keep working when more come). */
function openStringParts(name: string, prop: JsonObject, jobStatuses: readonly string[]): string[] {
  const parts: string[] = [];
  const c = constName(name);
  const known = prop["x-known-values"] as string[] | undefined;
  if (Array.isArray(known)) {
    parts.push(`/** The known values of ${name} (\`x-known-values\`); the field stays open, more may come. */\nexport const ${c} = ${list(known)};`);
  }
  const nonRetryable = prop["x-non-retryable"] as string[] | undefined;
  if (Array.isArray(nonRetryable)) {
    const unknown = nonRetryable.filter((v) => !known?.includes(v));
    if (unknown.length > 0) throw new Error(`x-non-retryable of ${name} names values it does not know: ${unknown.join(", ")}`);
    parts.push(
      `/** The values of ${name} for which running the same graph again cannot help (\`x-non-retryable\`). */\nexport const NON_RETRYABLE_${c} = ${list(nonRetryable)};`,
    );
  }
  const fromJob = prop["x-from-job-status"] as Record<string, string> | undefined;
  if (fromJob && typeof fromJob === "object") {
    const missing = jobStatuses.filter((s) => !(s in fromJob));
    if (missing.length > 0) throw new Error(`x-from-job-status of ${name} leaves out ${missing.join(", ")}`);
    const strange = Object.values(fromJob).filter((v) => !known?.includes(v));
    if (strange.length > 0) throw new Error(`x-from-job-status of ${name} gives values it does not know: ${strange.join(", ")}`);
    parts.push(`/** The ${name} of each JobStatus (\`x-from-job-status\`). */\nexport const ${scream(name)}_BY_JOB_STATUS = ${record(fromJob)};`);
  }
  return parts;
}

/** Source of generated/enums.ts. */
export function enumsSource(doc: JsonObject): string {
  const schemas = ((doc.components as JsonObject).schemas ?? {}) as Record<string, JsonObject>;
  const jobStatuses = (schemas.JobStatus?.enum as string[] | undefined) ?? [];
  const parts: string[] = [];
  for (const [name, schema] of Object.entries(schemas)) {
    const values = schema.enum as Json[] | undefined;
    if (values && schema.type === "string") {
      const c = constName(name);
      parts.push(`/** Every value of ${name}, in the spec's order. */\nexport const ${c} = ${list(values)};`);
    }
    // `x-terminal` on the schema (a closed enum) or on a property (an open string).
    const terminalOf: Array<[string, Json[]]> = [];
    if (Array.isArray(schema["x-terminal"])) terminalOf.push([name, schema["x-terminal"] as Json[]]);
    const openParts: string[] = [];
    for (const [propName, prop] of Object.entries((schema.properties as Record<string, JsonObject> | undefined) ?? {})) {
      if (Array.isArray(prop?.["x-terminal"])) terminalOf.push([name, prop["x-terminal"] as Json[]]);
      if (prop && typeof prop === "object") openParts.push(...openStringParts(propertyOwnerName(name, propName), prop, jobStatuses));
    }
    parts.push(...openParts);
    for (const [owner, terminal] of terminalOf) {
      parts.push(
        `/** The terminal values of ${owner} (\`x-terminal\`): a status that never changes. */\nexport const TERMINAL_${constName(owner)} = ${list(terminal)};`,
      );
    }
  }
  const codes = (schemas.ErrorCode?.enum as string[] | undefined) ?? [];
  parts.push(
    `/** Each error code's only HTTP status, from the \`x-error-codes\` of the responses that carry it. */\nexport const ERROR_CODE_STATUS = ${record(errorStatuses(doc, "x-error-codes", codes))};`,
  );
  // In status order, as the hosted table reads.
  const hostedSeen = statusesOf(doc, "x-hosted-error-types");
  const hostedTypes = [...hostedSeen.keys()].sort((a, b) => Math.min(...hostedSeen.get(a)!) - Math.min(...hostedSeen.get(b)!));
  parts.push(
    `/** Each error type of the hosted interface with its only HTTP status, from the \`x-hosted-error-types\` of the responses that carry it. */\nexport const HOSTED_ERROR_TYPE_STATUS = ${record(errorStatuses(doc, "x-hosted-error-types", hostedTypes))};`,
  );
  return `${BANNER}\n${parts.join("\n\n")}\n`;
}
