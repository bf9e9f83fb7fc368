// URL: follow-up links: their form, the mount prefix, and resolution against the request origin.
import { check, type T } from "../../check.ts";
import { isJob, submitOk, waitTerminal, type JobRef } from "../support/jobs.ts";
import { EventStream } from "../../machinery/stream.ts";
import { simpleGraph } from "../support/workflows.ts";

const NAMES = ["self", "events", "cancel"] as const;

function links(ref: JobRef): Array<[string, string]> {
  const urls = (ref.job.urls ?? {}) as Record<string, unknown>;
  return NAMES.filter((n) => typeof urls[n] === "string").map((n) => [n, urls[n] as string]);
}

async function followsTo(t: T, ref: JobRef, name: string, link: string): Promise<void> {
  // The client rule itself: a host-relative link resolves against the origin of its answer.
  const url = new URL(link, ref.from).toString();
  if (name === "events") {
    const { stream, ex } = await EventStream.open(t.http, url);
    stream?.close();
    t.expect(!!stream, `urls.events ${link} (resolved to ${url}) answered ${ex?.status}`, ex);
    return;
  }
  const ex = await t.http.request(name === "cancel" ? "POST" : "GET", url);
  t.expect(
    ex.status === 200 && isJob(ex.json) && ex.json.id === ref.job.id,
    `urls.${name} ${link} (resolved to ${url}) answered ${ex.status}, not this job`,
    ex,
  );
}

export default [
  check("URL-1 urls has self, events and cancel, each absolute or host-relative", { static: true }, async (t: T) => {
    const ref = await submitOk(t, simpleGraph());
    for (const n of NAMES) {
      const v = (ref.job.urls as Record<string, unknown> | undefined)?.[n];
      t.expect(typeof v === "string" && (/^https?:\/\//.test(v) || (v.startsWith("/") && !v.startsWith("//"))), `urls.${n} is ${JSON.stringify(v)}`);
    }
  }),

  check("URL-2 a host-relative link includes the mount prefix of the surface", { static: true }, async (t: T) => {
    const ref = await submitOk(t, simpleGraph());
    const prefix = `${t.http.basePath}/api/v2/`;
    for (const [n, v] of links(ref)) if (v.startsWith("/")) t.expect(v.startsWith(prefix), `urls.${n} ${v} does not start with ${prefix}`);
  }),

  check("URL-3 links resolved against the request origin reach the job, its stream and its cancel", async (t: T) => {
    const ref = await submitOk(t, simpleGraph());
    const end = await waitTerminal(t, ref);
    // The terminal job: following cancel changes nothing. A link without the prefix is URL-2's.
    const prefix = `${t.http.basePath}/api/v2/`;
    for (const [n, v] of links(end)) if (!v.startsWith("/") || v.startsWith(prefix)) await followsTo(t, end, n, v);
  }),
];
