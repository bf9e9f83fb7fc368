// AST: assets: records of outputs, references from workflows, content addressing, and the
// operations the seed leaves open (upload, hash checks, listing, ranges), checked where offered.
import { check, type T } from "../../check.ts";
import type { Exchange } from "../../machinery/http.ts";
import { download, endOf, runOk, submitOk } from "../support/jobs.ts";
import { blake3Of, codeOf, multipart, pngBytes, UUID } from "../support/support.ts";
import { assetGraph, nonce, simpleGraph } from "../support/workflows.ts";

type Asset = { id: string; hash: string | null; size_bytes: number; content_type: string; url: string };

/** POST /api/v2/assets (multipart); skips the check where the surface does not offer uploads. */
async function upload(t: T, bytes: Uint8Array, extra: Record<string, string> = {}, auth?: { bearer: string }): Promise<Exchange> {
  // Fields first, the file last: a server that hashes the file as it streams reads them before it.
  const { body, contentType } = multipart([
    { name: "file_path", value: "conformance.png" },
    ...Object.entries(extra).map(([name, value]) => ({ name, value })),
    { name: "file", value: bytes, filename: "conformance.png", contentType: "image/png" },
  ]);
  const ex = await t.http.request("POST", t.http.url("/api/v2/assets"), { body, headers: { "content-type": contentType }, auth });
  if (ex.status === 404 || ex.status === 405)
    t.skip(`POST /api/v2/assets answered ${ex.status}${codeOf(ex.json) ? ` ${codeOf(ex.json)}` : ""}: uploads are not offered here (open in the contract)`);
  return ex;
}

/** An image asset the caller owns: an upload where offered, else an output. */
async function ownImage(t: T): Promise<Asset> {
  const { body, contentType } = multipart([
    { name: "file", value: pngBytes(4, 4, [nonce(255), 0, 0, 255]), filename: "conformance.png", contentType: "image/png" },
  ]);
  const up = await t.http.request("POST", t.http.url("/api/v2/assets"), { body, headers: { "content-type": contentType } });
  if (up.status === 200 || up.status === 201) return up.json as Asset;
  const end = await runOk(t, simpleGraph());
  const out = end.job.outputs.find((o) => o.type === "image");
  t.need(
    out,
    `uploads answered ${up.status}, and the simple graph's job ${endOf(end.job)} with no image output (types ${JSON.stringify(end.job.outputs.map((o) => o.type))}) to use as an asset`,
  );
  return { id: out.id, hash: out.hash, size_bytes: out.size_bytes, content_type: out.content_type, url: out.url };
}

export default [
  check("AST-1 GET /api/v2/assets/{id} returns the record of an output; an unknown id is 404 not_found", async (t: T) => {
    const end = await runOk(t, simpleGraph());
    const out = end.job.outputs[0];
    t.need(out, "the job has no output (reported under OUT-2)");
    const { response } = await t.api.GET("/api/v2/assets/{id}", { params: { path: { id: out.id } } });
    const ex = t.ex(response)!;
    t.expect(ex.status === 200 && (ex.json as Asset)?.id === out.id, `GET of output asset ${out.id} answered ${ex.status}`, ex);
    const unknown = t.ex((await t.api.GET("/api/v2/assets/{id}", { params: { path: { id: crypto.randomUUID() } } })).response)!;
    t.expect(
      unknown.status === 404 && codeOf(unknown.json) === "not_found",
      `an unknown asset answered ${unknown.status} ${codeOf(unknown.json) ?? ""}`,
      unknown,
    );
  }),

  check("AST-2 a workflow uses the caller's own asset through a core/ASSET reference", async (t: T) => {
    const asset = await ownImage(t);
    await submitOk(t, assetGraph(asset.id));
  }),

  check("AST-3 asset ids are UUIDs and a hash, when set, is the blake3 of the content", async (t: T) => {
    const end = await runOk(t, simpleGraph());
    const out = end.job.outputs[0];
    t.need(out, "the job has no output (reported under OUT-2)");
    const { response } = await t.api.GET("/api/v2/assets/{id}", { params: { path: { id: out.id } } });
    const ex = t.ex(response)!;
    t.need(ex.status === 200, `the asset answered ${ex.status} (AST-1)`);
    const a = ex.json as Asset;
    t.expect(UUID.test(a.id), `asset id ${a.id} is not a UUID`, ex);
    if (a.hash !== null) {
      const bytes = await download(t, a.url);
      t.need(bytes.status === 200, `the asset url answered ${bytes.status} (OUT-5)`);
      t.expect((await blake3Of(bytes.bytes)) === a.hash, `hash ${a.hash} is not the blake3 of the content`, ex);
    }
  }),

  check("AST-3 the same bytes uploaded twice are two assets over one blob (same hash)", async (t: T) => {
    const bytes = pngBytes(4, 4, [nonce(255), nonce(255), 0, 255]);
    const a = await upload(t, bytes);
    const b = await upload(t, bytes);
    t.need(a.status < 300 && b.status < 300, `the uploads answered ${a.status} and ${b.status}`);
    const [x, y] = [a.json as Asset, b.json as Asset];
    t.expect(x.id !== y.id, "both uploads returned the same asset id", b);
    const expected = await blake3Of(bytes);
    for (const [ex, r] of [
      [a, x],
      [b, y],
    ] as const)
      if (r.hash !== null) t.expect(r.hash === expected, `hash ${r.hash}, the bytes hash to ${expected}`, ex);
  }),

  check("AST-3 the content's ETag is the blob's blake3 hash, the same for the same bytes", async (t: T) => {
    const bytes = pngBytes(4, 3, [nonce(255), nonce(255), nonce(255), 255]);
    const expected = `"${await blake3Of(bytes)}"`;
    const ups = [await upload(t, bytes), await upload(t, bytes)];
    for (const up of ups) {
      t.need(up.status < 300, `the upload answered ${up.status} (AST-4)`);
      const ex = await download(t, (up.json as Asset).url);
      t.need(ex.status === 200, `the asset's url answered ${ex.status} (OUT-5)`);
      // A storage URL (a bucket's presigned link) carries the store's own tag: only the contract's route is judged.
      t.need(
        /\/api\/v2\/assets\/[^/]+\/content$/.test(new URL(ex.url).pathname),
        `the asset's bytes came from a storage URL (${new URL(ex.url).origin}), whose ETag is the store's`,
      );
      const etag = ex.headers.get("etag");
      t.expect(etag === expected, `the content of asset ${(up.json as Asset).id} has ETag ${etag}, its bytes hash to ${expected}`, ex);
    }
  }),

  check("AST-4 created_new tells an upload of new bytes (201, true) from one over bytes the caller had (200, false)", async (t: T) => {
    const bytes = pngBytes(5, 2, [nonce(255), nonce(255), nonce(255), 255]);
    const first = await upload(t, bytes);
    const again = await upload(t, bytes);
    t.need(first.status < 300 && again.status < 300, `the uploads answered ${first.status} and ${again.status}`);
    const [a, b] = [first.json as Asset & { created_new?: unknown }, again.json as Asset & { created_new?: unknown }];
    t.need(a.created_new !== undefined || b.created_new !== undefined, "neither upload answered created_new (optional in the contract)");
    t.expect(
      first.status === 201 && a.created_new === true,
      `the first upload of new bytes answered ${first.status} with created_new ${JSON.stringify(a.created_new)}`,
      first,
    );
    t.expect(
      again.status === 200 && b.created_new === false,
      `the same bytes uploaded again answered ${again.status} with created_new ${JSON.stringify(b.created_new)}`,
      again,
    );
  }),

  check(
    "AST-4 created_new is per caller: bytes another caller uploaded first are new to this one (201, true), then known (200, false)",
    { when: (r) => (r.options.otherToken ? undefined : "no second caller given (pass --other-token)") },
    async (t: T) => {
      // The spec: "Another account's copy of the same bytes never shows here."
      const bytes = pngBytes(3, 5, [nonce(255), nonce(255), nonce(255), 255]);
      const theirs = await upload(t, bytes, {}, { bearer: t.options.otherToken! });
      t.need(theirs.status < 300, `the other caller's upload answered ${theirs.status}`);
      const mine = await upload(t, bytes);
      const again = await upload(t, bytes);
      t.need(mine.status < 300 && again.status < 300, `the caller's uploads answered ${mine.status} and ${again.status}`);
      const [a, b] = [mine.json as Asset & { created_new?: unknown }, again.json as Asset & { created_new?: unknown }];
      t.need(a.created_new !== undefined || b.created_new !== undefined, "neither upload answered created_new (optional in the contract)");
      t.expect(
        mine.status === 201 && a.created_new === true,
        `bytes only another caller had uploaded answered this caller ${mine.status} with created_new ${JSON.stringify(a.created_new)}`,
        mine,
      );
      t.expect(
        again.status === 200 && b.created_new === false,
        `the same bytes uploaded again by this caller answered ${again.status} with created_new ${JSON.stringify(b.created_new)}`,
        again,
      );
      t.expect(a.id !== (theirs.json as Asset).id, "the caller's upload answered the other caller's asset", mine);
    },
  ),

  check("AST-4 upload: POST /api/v2/assets stores a file as an asset the caller owns", async (t: T) => {
    const bytes = pngBytes(3, 3, [nonce(255), 1, 2, 255]);
    const ex = await upload(t, bytes);
    t.expect(ex.status === 201 || ex.status === 200, `the upload answered ${ex.status}`, ex);
    const a = ex.json as Asset;
    t.expect(a?.size_bytes === bytes.byteLength, `size_bytes ${a?.size_bytes}, uploaded ${bytes.byteLength}`, ex);
  }),

  check("AST-4 an upload whose bytes do not match expected_hash is 409 hash_mismatch", async (t: T) => {
    const ex = await upload(t, pngBytes(2, 2, [nonce(255), 0, 0, 255]), { expected_hash: `blake3:${"0".repeat(64)}` });
    t.expect(ex.status === 409 && codeOf(ex.json) === "hash_mismatch", `expected 409 hash_mismatch, got ${ex.status} ${codeOf(ex.json) ?? ""}`, ex);
  }),

  check("AST-4 from-hash and by-hash with a hash the caller cannot use are 404 blob_not_found", async (t: T) => {
    const hash = `blake3:${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
    const ex = await t.http.request("POST", t.http.url("/api/v2/assets/from-hash"), { json: { hash } });
    if (ex.status === 405 || (ex.status === 404 && codeOf(ex.json) === "not_found"))
      t.skip(
        `POST /api/v2/assets/from-hash answered ${ex.status}${codeOf(ex.json) ? ` ${codeOf(ex.json)}` : ""}: from-hash is not offered here (open in the contract)`,
      );
    t.expect(
      ex.status === 404 && codeOf(ex.json) === "blob_not_found",
      `from-hash of an unknown hash: expected 404 blob_not_found, got ${ex.status} ${codeOf(ex.json) ?? ""}`,
      ex,
    );
    const head = await t.http.request("HEAD", t.http.url(`/api/v2/assets/by-hash/${hash}`));
    t.expect(head.status === 404, `HEAD by-hash of an unknown hash answered ${head.status}`, head);
  }),

  check(
    "AST-4 over the caller's own upload, by-hash is 200 and from-hash 200 (that record) or 201 (a new one); a deleted asset is 204, then 404 to a read and a delete",
    async (t: T) => {
      // The answers a client reuses known bytes and cleans up with; --explore reaches them only by chance.
      const up = await upload(t, pngBytes(3, 3, [nonce(255), 5, 6, 255]));
      t.need(up.status === 201, `an upload of new bytes answered ${up.status}, not 201 (AST-4)`);
      const asset = up.json as Asset;
      t.need(asset.hash, "the uploaded asset has no hash yet to look it up by");
      const head = await t.http.request("HEAD", t.http.url(`/api/v2/assets/by-hash/${asset.hash}`));
      t.expect(head.status === 200, `HEAD by-hash of the caller's own upload answered ${head.status}`, head);
      // The same file_path as the upload's (upload() sends conformance.png): a surface may answer with that record.
      const from = await t.http.request("POST", t.http.url("/api/v2/assets/from-hash"), { json: { hash: asset.hash, file_path: "conformance.png" } });
      if (from.status === 405 || (from.status === 404 && codeOf(from.json) === "not_found"))
        t.skip(`POST /api/v2/assets/from-hash answered ${from.status}: from-hash is not offered here (open in the contract)`);
      const other = from.json as Asset | undefined;
      if (from.status === 200)
        t.expect(other?.id === asset.id, `from-hash answered 200 (an identical record existed) with ${other?.id}, not the upload ${asset.id}`, from);
      else if (t.expect(from.status === 201, `from-hash of the caller's own upload answered ${from.status}`, from))
        t.expect(other?.id !== asset.id && other?.hash === asset.hash, `from-hash answered 201 with record ${other?.id} over ${other?.hash}`, from);
      const del = await t.http.request("DELETE", t.http.url(`/api/v2/assets/${asset.id}`));
      t.expect(del.status === 204, `DELETE of the caller's upload answered ${del.status}`, del);
      if (del.status !== 204) return;
      const read = await t.http.request("GET", t.http.url(`/api/v2/assets/${asset.id}`));
      t.expect(read.status === 404, `GET of the deleted asset answered ${read.status}`, read);
      const again = await t.http.request("DELETE", t.http.url(`/api/v2/assets/${asset.id}`));
      t.expect(again.status === 404, `a second DELETE of the asset answered ${again.status}`, again);
    },
  ),

  check("AST-4 listing returns the caller's jobs, newest first", async (t: T) => {
    const a = await submitOk(t, simpleGraph());
    const b = await submitOk(t, simpleGraph());
    const ex = await t.http.request("GET", t.http.url("/api/v2/jobs?limit=20"));
    if (ex.status === 404 || ex.status === 405)
      t.skip(`GET /api/v2/jobs answered ${ex.status}${codeOf(ex.json) ? ` ${codeOf(ex.json)}` : ""}: listing is not offered here (open in the contract)`);
    const ids = ((ex.json as { jobs?: Array<{ id: string }> })?.jobs ?? []).map((j) => j.id);
    const [ia, ib] = [ids.indexOf(a.job.id), ids.indexOf(b.job.id)];
    t.expect(ia >= 0 && ib >= 0, "the list lacks the caller's two newest jobs", ex);
    t.expect(ib < ia, "the list is not newest first", ex);
  }),

  check("AST-4 asset content honours Range (206) and refuses an unsatisfiable one (416)", async (t: T) => {
    const end = await runOk(t, simpleGraph());
    const out = end.job.outputs[0];
    t.need(
      out && out.size_bytes > 4,
      `the simple graph's job ${endOf(end.job)} with ${out ? `a first output of ${out.size_bytes} bytes` : "no output"}; a range needs more than 4`,
    );
    // With credentials the content answers bytes or, as production does, a redirect to a link
    // that needs none: the range is then asked of that link, without credentials.
    let url = t.http.url(`/api/v2/assets/${out.id}/content`);
    let part = await t.http.request("GET", url, { headers: { range: "bytes=0-3" } });
    const location = part.headers.get("location");
    const redirected = part.status >= 300 && part.status < 400 && location !== null;
    if (redirected) {
      url = new URL(location!, part.url).toString();
      part = await t.http.request("GET", url, { auth: "none", raw: true, headers: { range: "bytes=0-3" } });
    }
    if (part.status === 404 || part.status === 405)
      t.skip(
        `GET ${redirected ? "the content's redirect" : "/api/v2/assets/{id}/content"} answered ${part.status}: asset content is not offered here (open in the contract)`,
      );
    t.expect(part.status === 206 && part.bytes.byteLength === 4, `Range bytes=0-3 answered ${part.status} with ${part.bytes.byteLength} bytes`, part);
    const beyond = await t.http.request("GET", url, {
      ...(redirected ? { auth: "none" as const, raw: true } : {}),
      headers: { range: `bytes=${out.size_bytes + 10}-` },
    });
    t.expect(beyond.status === 416, `an unsatisfiable Range answered ${beyond.status}`, beyond);
  }),
];
