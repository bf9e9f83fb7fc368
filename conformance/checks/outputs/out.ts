// OUT: a job's outputs: their fields, their types, their asset records, their hashes and the
// bytes their links serve.
import { check, type T } from "../../check.ts";
import { download, runOk, type Output } from "../support/jobs.ts";
import { blake3Of, mediaType } from "../support/support.ts";
import { mixedGraph } from "../support/workflows.ts";

const FIELDS = ["node_id", "name", "type", "content_type", "size_bytes", "id", "hash", "url", "url_expires_at"];

export default [
  check("OUT-1 every output carries node_id, name, type, content_type, size_bytes, id, hash, url and url_expires_at", async (t: T) => {
    const end = await runOk(t, mixedGraph());
    t.need(end.job.outputs.length > 0, "the job has no outputs (reported under OUT-2)");
    for (const o of end.job.outputs) {
      const absent = FIELDS.filter((k) => !Object.hasOwn(o, k));
      t.expect(absent.length === 0, `output ${o.id ?? o.name} omits ${absent.join(", ")}`, end.ex);
    }
  }),

  check("OUT-2 an image output is typed image and a text output text; no output node is dropped", async (t: T) => {
    const end = await runOk(t, mixedGraph());
    const byNode = (id: string) => end.job.outputs.filter((o) => o.node_id === id);
    t.expect(
      byNode("3").some((o) => o.type === "image"),
      `SaveImage (node 3) has no image output: ${JSON.stringify(byNode("3").map((o) => o.type))}`,
      end.ex,
    );
    t.expect(
      byNode("5").some((o) => o.type === "text"),
      `PreviewAny (node 5) has no text output: ${JSON.stringify(byNode("5").map((o) => o.type))}`,
      end.ex,
    );
  }),

  check("OUT-3 each output id resolves at GET /api/v2/assets/{id} while the job is retained", async (t: T) => {
    const end = await runOk(t, mixedGraph());
    for (const o of end.job.outputs) {
      const { response } = await t.api.GET("/api/v2/assets/{id}", { params: { path: { id: o.id } } });
      const ex = t.ex(response)!;
      if (!t.expect(ex.status === 200, `GET /api/v2/assets/${o.id} answered ${ex.status}`, ex)) continue;
      const a = ex.json as { id?: string };
      t.expect(a.id === o.id, `GET /api/v2/assets/${o.id} returned asset ${a.id}`, ex);
    }
  }),

  check("OUT-4 a hash, when set, is the blake3 of the bytes url serves", async (t: T) => {
    const end = await runOk(t, mixedGraph());
    const hashed = end.job.outputs.filter((o: Output) => o.hash != null);
    t.need(hashed.length > 0, `all ${end.job.outputs.length} outputs showed hash null (computed lazily, allowed)`);
    for (const o of hashed) {
      const ex = await download(t, o.url);
      t.need(ex.status === 200, `the url answered ${ex.status} (reported under OUT-5)`);
      const actual = await blake3Of(ex.bytes);
      t.expect(actual === o.hash, `hash ${o.hash} but the bytes hash to ${actual}`, ex);
    }
  }),

  check("OUT-5 url serves exactly size_bytes bytes of content_type, without a token, until url_expires_at", async (t: T) => {
    const end = await runOk(t, mixedGraph());
    t.need(end.job.outputs.length > 0, "the job has no outputs (reported under OUT-2)");
    for (const o of end.job.outputs) {
      // A missing url_expires_at is OUT-1's: this check judges the link, not the field.
      if (o.url_expires_at !== undefined) {
        t.expect(Date.parse(o.url_expires_at) > Date.now(), `url_expires_at ${o.url_expires_at} has passed already`);
        // A link signed the contract's way carries its own expiry (`expires`, Unix seconds): the field must tell the same.
        const own = signedExpiry(o.url, end.ex?.url);
        if (own !== undefined)
          t.expect(
            Math.abs(Date.parse(o.url_expires_at) - own * 1000) < 1000,
            `url_expires_at ${o.url_expires_at}, but the link's own expires is ${new Date(own * 1000).toISOString()}`,
            end.ex,
          );
      }
      const ex = await download(t, o.url);
      if (!t.expect(ex.status === 200, `GET ${o.url} without a token answered ${ex.status}`, ex)) continue;
      t.expect(ex.bytes.byteLength === o.size_bytes, `the url served ${ex.bytes.byteLength} bytes, size_bytes says ${o.size_bytes}`, ex);
      t.expect(
        mediaType(ex.headers.get("content-type")) === mediaType(o.content_type),
        `the url served ${ex.headers.get("content-type")}, content_type says ${o.content_type}`,
        ex,
      );
    }
  }),
];

/** The `expires` of a link to the contract's signed content route (`/api/v2/assets/{id}/content?expires=&signature=`), else undefined. */
function signedExpiry(url: string, base = "http://invalid"): number | undefined {
  const u = new URL(url, base);
  const expires = u.searchParams.get("expires");
  if (!/\/api\/v2\/assets\/[^/]+\/content$/.test(u.pathname) || !u.searchParams.has("signature") || expires === null || !/^\d+$/.test(expires))
    return undefined;
  return Number(expires);
}
