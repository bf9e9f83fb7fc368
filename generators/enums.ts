// The contract's enumerations as values, so src/ imports them instead of copying them: every
// string enum of components.schemas, the values a schema marks `x-terminal`, and each error
// code's one HTTP status, read from the `x-error-codes` of the responses that carry it.
import { BANNER, deref, operations, type Json, type JsonObject } from "./spec-files.ts";

/** `JobStatus` -> `JOB_STATUSES`, `ErrorCode` -> `ERROR_CODES`. */
function constName(schema: string): string {
  const scream = schema.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();
  return scream.endsWith("S") ? `${scream}ES` : `${scream}S`;
}

const list = (values: readonly Json[]) => `[${values.map((v) => JSON.stringify(v)).join(", ")}] as const`;

/** Every error code with the one status its responses declare; throws on a code with none or two. */
function errorStatuses(doc: JsonObject, codes: readonly string[]): Record<string, number> {
  const seen: Record<string, Set<number>> = {};
  const note = (status: string, response: Json) => {
    const r = deref<JsonObject>(doc, response);
    for (const code of (r["x-error-codes"] as string[] | undefined) ?? []) (seen[code] ??= new Set()).add(Number(status));
  };
  for (const { op } of operations(doc)) for (const [status, r] of Object.entries((op.responses as JsonObject) ?? {})) note(status, r);
  const out: Record<string, number> = {};
  for (const code of codes) {
    const statuses = [...(seen[code] ?? [])];
    if (statuses.length !== 1) throw new Error(`error code ${code} is declared with ${statuses.length} statuses (${statuses.join(", ")}); it needs exactly one`);
    out[code] = statuses[0]!;
  }
  return out;
}

/** Source of generated/enums.ts. */
export function enumsSource(doc: JsonObject): string {
  const schemas = ((doc.components as JsonObject).schemas ?? {}) as Record<string, JsonObject>;
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
    for (const prop of Object.values((schema.properties as Record<string, JsonObject> | undefined) ?? {})) {
      if (Array.isArray(prop?.["x-terminal"])) terminalOf.push([name, prop["x-terminal"] as Json[]]);
    }
    for (const [owner, terminal] of terminalOf) {
      parts.push(`/** The terminal values of ${owner} (\`x-terminal\`): a status that never changes. */\nexport const TERMINAL_${constName(owner)} = ${list(terminal)};`);
    }
  }
  const codes = (schemas.ErrorCode?.enum as string[] | undefined) ?? [];
  const statuses = errorStatuses(doc, codes);
  parts.push(
    `/** Each error code's only HTTP status, from the \`x-error-codes\` of the responses that carry it. */\nexport const ERROR_CODE_STATUS = {\n${Object.entries(statuses)
      .map(([code, status]) => `  ${code}: ${status},`)
      .join("\n")}\n} as const;`,
  );
  return `${BANNER}\n${parts.join("\n\n")}\n`;
}
