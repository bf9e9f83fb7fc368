// The client a command talks through, from --base-url/--token or FLOWGATE_BASE_URL/FLOWGATE_TOKEN.
import { DEFAULT_BASE_URL, FlowgateClient } from "../client/v2-client.ts";
import { FlowgateApiError } from "../client/errors.ts";
import { stringFlag, UsageError, type ParsedCommand } from "./command.ts";

/** A v2 client configured from the parsed flags. */
export function clientFrom(parsed: ParsedCommand): FlowgateClient {
  const baseUrl = stringFlag(parsed.values, "base-url") ?? DEFAULT_BASE_URL;
  if (!/^https?:\/\/[^/]+/i.test(baseUrl)) throw new UsageError(`--base-url must be an http(s) URL, got "${baseUrl}"`);
  return new FlowgateClient({ baseUrl, token: stringFlag(parsed.values, "token") });
}

/** A one-paragraph explanation of an API error, with per-node details of an invalid workflow. */
export function describeError(err: unknown): string {
  if (!(err instanceof FlowgateApiError)) {
    const cause = (err as { cause?: { message?: string } })?.cause?.message;
    return `${(err as Error)?.message ?? String(err)}${cause ? ` (${cause})` : ""}`;
  }
  const lines = [`${err.code} (HTTP ${err.status}): ${err.message}`];
  const nodeErrors = err.details?.node_errors as Record<string, Array<{ field: string; reason: string }>> | undefined;
  for (const [node, errors] of Object.entries(nodeErrors ?? {})) {
    for (const e of errors) lines.push(`  node ${node}: ${e.field || "(node)"} ${e.reason}`);
  }
  const fields = err.details?.fields as Array<{ field: string; reason: string }> | undefined;
  for (const f of fields ?? []) lines.push(`  ${f.field || "(body)"}: ${f.reason}`);
  if (err.retryAfter !== null) lines.push(`  retry after ${err.retryAfter} s`);
  return lines.join("\n");
}
