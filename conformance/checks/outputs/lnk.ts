// LNK: every 201 names what it created in `Location`, and that address reads it back.
import { check, type T } from "../../check.ts";
import type { Exchange } from "../../machinery/http.ts";
import { submitOk } from "../support/jobs.ts";
import { codeOf, multipart, pngBytes } from "../support/support.ts";
import { nonce, simpleGraph } from "../support/workflows.ts";

/** Follows a 201's `Location` as a client would and expects the created resource `id` there. */
async function locationLeadsTo(t: T, what: string, created: Exchange, id: string): Promise<void> {
  const location = created.headers.get("location");
  if (!t.expect(!!location, `the 201 of ${what} carries no Location header`, created)) return;
  const prefix = `${t.http.basePath}/api/v2/`;
  if (location!.startsWith("/"))
    t.expect(location!.startsWith(prefix), `the Location of ${what}, ${location}, does not start with the mount prefix ${prefix}`, created);
  // A host-relative Location resolves against the origin of the answer that carried it (URL-3).
  const url = new URL(location!, created.url).toString();
  const read = await t.http.request("GET", url);
  const readId = (read.json as { id?: unknown } | undefined)?.id;
  t.expect(
    read.status === 200 && readId === id,
    `the Location of ${what}, ${location} (resolved to ${url}), answered ${read.status}${readId ? ` with id ${String(readId)}` : ""}, not ${id}`,
    read,
  );
}

/** A PNG no other check uploads (three random channels). */
function freshPng(): Uint8Array {
  return pngBytes(3, 5, [nonce(255), nonce(255), nonce(255), 255]);
}

/** POST /api/v2/assets of `bytes`; skips where the surface does not offer uploads. */
async function upload(t: T, bytes: Uint8Array): Promise<Exchange> {
  const { body, contentType } = multipart([
    { name: "file_path", value: "conformance-location.png" },
    { name: "file", value: bytes, filename: "conformance-location.png", contentType: "image/png" },
  ]);
  const ex = await t.http.request("POST", t.http.url("/api/v2/assets"), { body, headers: { "content-type": contentType } });
  if (ex.status === 404 || ex.status === 405)
    t.skip(`POST /api/v2/assets answered ${ex.status}${codeOf(ex.json) ? ` ${codeOf(ex.json)}` : ""}: uploads are not offered here (open in the contract)`);
  return ex;
}

export default [
  check("LNK-1 the 201 of a submission carries a Location that reads the job", async (t: T) => {
    const ref = await submitOk(t, simpleGraph());
    await locationLeadsTo(t, `POST /api/v2/jobs (job ${ref.job.id})`, ref.ex!, ref.job.id);
  }),

  check("LNK-1 the 201 of an upload and of a from-hash carry a Location that reads the asset", async (t: T) => {
    const up = await upload(t, freshPng());
    t.need(up.status === 201, `an upload of new bytes answered ${up.status}, not 201 (AST-4)`);
    const asset = up.json as { id: string; hash: string | null };
    await locationLeadsTo(t, `POST /api/v2/assets (asset ${asset.id})`, up, asset.id);
    t.need(asset.hash, "the uploaded asset has no hash yet to create another record from");
    const from = await t.http.request("POST", t.http.url("/api/v2/assets/from-hash"), {
      json: { hash: asset.hash, file_path: "conformance-location-copy.png" },
    });
    if (from.status === 405 || (from.status === 404 && codeOf(from.json) === "not_found"))
      t.skip(`POST /api/v2/assets/from-hash answered ${from.status}: from-hash is not offered here (open in the contract)`);
    // A from-hash that finds an identical record answers 200 without Location: nothing was created.
    if (from.status === 201)
      await locationLeadsTo(t, `POST /api/v2/assets/from-hash (asset ${(from.json as { id: string }).id})`, from, (from.json as { id: string }).id);
    else t.expect(from.status === 200, `from-hash of the caller's own upload answered ${from.status}`, from);
  }),
];
