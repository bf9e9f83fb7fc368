// The client a command talks through, from --base-url/--token or FLOWGATE_BASE_URL/FLOWGATE_TOKEN.
import { DEFAULT_BASE_URL, FlowgateClient } from "../client/v2-client.ts";
import { FlowgateApiError } from "../client/errors.ts";
import { networkReason } from "../domain/network-errors.ts";
import { stringFlag, UsageError, type ParsedCommand } from "./command.ts";

/** A v2 client configured from the parsed flags. */
export function clientFrom(parsed: ParsedCommand): FlowgateClient {
  const baseUrl = stringFlag(parsed.values, "base-url") ?? DEFAULT_BASE_URL;
  if (!/^https?:\/\/[^/]+/i.test(baseUrl)) throw new UsageError(`--base-url must be an http(s) URL, got "${baseUrl}"`);
  return new FlowgateClient({ baseUrl, token: stringFlag(parsed.values, "token"), fetch: explainingUnreachable(baseUrl) });
}

/** A failed connection, named by the server it meant: `no flowgate server answers at URL (reason)`. */
export class ServerUnreachableError extends TypeError {
  constructor(url: string, cause: unknown) {
    const reason = networkReason((cause as { cause?: unknown })?.cause ?? cause);
    super(`no flowgate server answers at ${url}${reason ? ` (${reason})` : ""}`, { cause });
    this.name = "ServerUnreachableError";
  }
}

/**
 * fetch whose transport failures (undici's bare `fetch failed`) say which server did not answer.
 * Still a TypeError, so the client's retry of idempotent calls treats it as a network error.
 */
function explainingUnreachable(baseUrl: string): (request: Request) => Promise<Response> {
  return (request) =>
    fetch(request).catch((err: unknown) => {
      if (request.signal.aborted || !(err instanceof TypeError)) throw err;
      const target = request.url.startsWith(baseUrl) ? baseUrl : new URL(request.url).origin;
      throw new ServerUnreachableError(target, err);
    });
}

/** A one-paragraph explanation of an API error, with per-node details of an invalid workflow. */
export function describeError(err: unknown): string {
  if (err instanceof ServerUnreachableError) return err.message;
  if (!(err instanceof FlowgateApiError)) {
    const cause = (err as { cause?: { message?: string } })?.cause?.message;
    return `${(err as Error)?.message ?? String(err)}${cause ? ` (${cause})` : ""}`;
  }
  const lines = [`${err.code} (HTTP ${err.status}): ${err.message}`];
  const nodeErrors = err.details?.node_errors as Record<string, Array<{ field: string; reason: string; message?: string }>> | undefined;
  for (const [node, errors] of Object.entries(nodeErrors ?? {})) {
    // The code stays (scripts match it); a human message, where the server gives one, follows it.
    for (const e of errors) lines.push(`  ${node ? `node ${node}` : "graph"}: ${e.field || "(node)"} ${e.reason}${e.message ? `: ${e.message}` : ""}`);
  }
  const fields = err.details?.fields as Array<{ field: string; reason: string }> | undefined;
  for (const f of fields ?? []) lines.push(`  ${f.field || "(body)"}: ${f.reason}`);
  if (err.retryAfter !== null) lines.push(`  retry after ${err.retryAfter} s`);
  return lines.join("\n");
}
