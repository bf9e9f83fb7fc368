// Follow-up links (URL-1..3): absolute links are used as they are; host-relative links already
// carry the surface's mount prefix, so they are resolved against the origin of the response that
// returned them, never against the configured base URL (which may carry the same prefix).
import type { Job, Output } from "./types.ts";

/** Resolves a link from a response against that response's URL (its origin only). */
export function resolveLink(link: string, responseUrl: string): string {
  if (/^https?:\/\//i.test(link)) return link;
  if (!link.startsWith("/") || link.startsWith("//")) {
    throw new Error(`not an absolute URL or a host-relative link: ${JSON.stringify(link)}`);
  }
  return new URL(responseUrl).origin + link;
}

/** A copy of a job whose `urls` and output `url`s are absolute, resolved per URL-3. */
export function withResolvedLinks<T extends Job>(job: T, responseUrl: string): T {
  return {
    ...job,
    urls: {
      self: resolveLink(job.urls.self, responseUrl),
      events: resolveLink(job.urls.events, responseUrl),
      cancel: resolveLink(job.urls.cancel, responseUrl),
      // Only a non-empty link is one: an empty string must not become a request for `/jobs//logs`.
      ...(job.urls.logs ? { logs: resolveLink(job.urls.logs, responseUrl) } : {}),
    },
    outputs: job.outputs.map((o) => withResolvedOutput(o, responseUrl)),
  };
}

/** A copy of an output (or asset) whose `url` is absolute. */
export function withResolvedOutput<T extends Pick<Output, "url">>(output: T, responseUrl: string): T {
  return { ...output, url: resolveLink(output.url, responseUrl) };
}
